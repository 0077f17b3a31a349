/**
 * Fold a job's events, in seq order, into its view: state, stages, progress, alerts, metrics and the
 * series behind the charts. Pure functions with no JupyterLab import, so Jest tests them directly; the
 * same rules as `jupyter_promote/events/fold.py` on the server. Replays change nothing; a final state
 * is never undone.
 */

import { IArtifact, IJobEvent, JobState } from '../api/jobs';
import { problem } from './validate';
import { IJobImage, IJobView, IPoint, isFinal, IStage, MAX_POINTS, STAGE_NAMES, StageName } from './view';

function append(points: IPoint[], point: IPoint): IPoint[] {
  const next = points.length >= MAX_POINTS ? points.slice(1) : points.slice();
  next.push(point);
  return next;
}

/** Whether a JSON value is true as Python's `bool()` reads it (an empty list or object is false). */
function truthy(value: unknown): boolean {
  if (Array.isArray(value)) {
    return value.length > 0;
  }
  if (value !== null && typeof value === 'object') {
    return Object.keys(value).length > 0;
  }
  return Boolean(value);
}

/**
 * The stage a folded status event enters, or null when it continues the current one: its `stage` when
 * it is one of the stage names, else derived from its state alone. Never read from its message.
 */
function stageOf(event: IJobEvent): StageName | null {
  if ((STAGE_NAMES as unknown[]).includes(event.stage)) {
    return event.stage as StageName;
  }
  const state = event.state as string;
  if (state === 'queued' || state === 'running') {
    return state;
  }
  return isFinal(state) ? 'finished' : null;
}

function enterStage(stages: IStage[], name: StageName, ts: number): IStage[] {
  const last = stages[stages.length - 1];
  if (last && last.name === name) {
    return stages;
  }
  const closed = stages.map((stage, i) =>
    i === stages.length - 1 && stage.end === null ? { ...stage, end: ts } : stage
  );
  return [...closed, { name, start: ts, end: name === 'finished' ? ts : null }];
}

/**
 * Fold one event into a view. Returns the same view for an event that cannot be folded (see
 * `problem`) or that was folded already (seq <= view.seq), so replays after a reconnect or a reload
 * change nothing; a final state is never undone.
 */
export function foldEvent(view: IJobView, event: IJobEvent): IJobView {
  // over 60 lines: one case per event type, kept as one switch to read beside fold.py's
  if (problem(event) !== null || event.seq <= view.seq) {
    return view;
  }
  const next: IJobView = { ...view, seq: event.seq };
  switch (event.type) {
    case 'status': {
      const state = event.state as JobState;
      if (isFinal(view.state) && !isFinal(state)) {
        return next;
      }
      next.state = state;
      next.reason = (event.reason as string) ?? null;
      next.message = (event.message as string) ?? null;
      if (state === 'running' && next.startedAt === null) {
        next.startedAt = event.ts;
      }
      if (isFinal(state)) {
        next.finishedAt = event.ts;
      }
      const stage = stageOf(event);
      if (stage !== null) {
        next.stages = enterStage(view.stages, stage, event.ts);
        next.stage = stage;
      }
      break;
    }
    case 'image':
      if (truthy(event.ref)) {
        const image: IJobImage = { ref: event.ref, built: event.built ?? null, digest: event.digest ?? null };
        next.image = image;
        next.record = { ...view.record, image: { ...image } };
      }
      break;
    case 'cell':
      // the notebook's own cells (own_*), not the injected ones, when the runner says which they are
      next.cellsTotal = ((event.own_total ?? event.total) as number) ?? view.cellsTotal;
      if (truthy(event.injected) && event.own_total !== undefined && event.own_total !== null) {
        break;
      }
      if (event.phase === 'start') {
        next.cellNumber = ((event.own_number ?? event.number) as number) ?? null;
      } else if (event.phase === 'end' && truthy(event.ok)) {
        next.cellsDone = view.cellsDone + 1;
      } else if (event.phase === 'error') {
        next.failedCell = {
          number: event.own_number ?? event.number ?? null,
          ename: event.ename ?? null,
          evalue: event.evalue ?? null,
          source: event.source ?? null
        };
      }
      break;
    case 'step':
      next.steps = (event.steps as number) ?? view.steps;
      next.stepsPerS = (event.steps_per_s as number) ?? null;
      if (typeof event.steps_per_s === 'number') {
        next.series = {
          ...view.series,
          stepsPerS: append(view.series.stepsPerS, { t: event.ts, v: event.steps_per_s })
        };
      }
      break;
    case 'heartbeat':
      next.steps = Math.max(view.steps, typeof event.steps === 'number' ? event.steps : 0);
      break;
    case 'metric': {
      const reported = event.metrics as Record<string, unknown>;
      next.metrics = { ...view.metrics, ...reported };
      const metrics = { ...view.series.metrics };
      for (const [name, value] of Object.entries(reported)) {
        if (typeof value === 'number') {
          metrics[name] = append(metrics[name] ?? [], { t: event.ts, v: value });
        }
      }
      next.series = { ...view.series, metrics };
      break;
    }
    case 'gpu': {
      const gpuMemory = { ...view.series.gpuMemory };
      for (const device of (Array.isArray(event.devices) ? event.devices : []) as Record<string, number>[]) {
        const used = device?.memory_used ?? device?.reserved ?? device?.allocated;
        if (typeof used === 'number') {
          const name = `GPU ${device.index}`;
          gpuMemory[name] = append(gpuMemory[name] ?? [], { t: event.ts, v: used });
        }
      }
      next.series = { ...view.series, gpuMemory };
      break;
    }
    case 'alert':
      next.alerts = [...view.alerts, event];
      break;
    case 'artifacts': {
      const artifacts = (event.files as IArtifact[]).map(f => ({ path: f.path, size: f.size }));
      next.artifacts = artifacts;
      next.record = { ...view.record, artifacts };
      break;
    }
    case 'attempt':
      return startedAgain(next, event);
  }
  return next;
}

/**
 * The job starts again after an infrastructure failure (its submitter's signed word): queued once more,
 * its progress from zero; its alerts and metrics so far are kept (`_attempt` of fold.py).
 */
function startedAgain(next: IJobView, event: IJobEvent): IJobView {
  return {
    ...next,
    attempt: typeof event.number === 'number' ? event.number : next.attempt + 1,
    state: 'queued',
    reason: 'retrying',
    message: (event.message as string) ?? null,
    finishedAt: null,
    failedCell: null,
    cellNumber: null,
    cellsDone: 0,
    steps: 0,
    stepsPerS: null,
    stages: enterStage(next.stages, 'queued', event.ts),
    stage: 'queued'
  };
}

/** Fold events in order (they may repeat or overlap what the view already has). */
export function foldEvents(view: IJobView, events: IJobEvent[]): IJobView {
  return events.reduce(foldEvent, view);
}

/** Whether a bus message starting at `firstSeq` leaves a gap after what the view has folded. */
export function hasGap(view: IJobView, firstSeq: number): boolean {
  return firstSeq > view.seq + 1;
}
