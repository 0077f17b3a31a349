/**
 * Fold a job's events, in seq order, into what the sidebar shows: state, stages, progress, alerts,
 * metrics and the series behind the charts. Pure functions with no JupyterLab import, so Jest tests
 * them directly; the same rules as `jupyter_promote/events/fold.py` on the server.
 */

export type JobState = 'pending' | 'building' | 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const JOB_STATES: JobState[] = ['pending', 'building', 'queued', 'running', 'succeeded', 'failed', 'cancelled'];

const FINAL_STATES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);

/** Whether a job in this state will never change again. */
export function isFinal(state: string): boolean {
  return FINAL_STATES.has(state);
}

/** One event of a job, as `events.jsonl`, the store and the event bus carry it. */
export interface IJobEvent {
  seq: number;
  ts: number;
  job: string;
  type: string;
  [field: string]: any;
}

/** A file a job wrote in its working directory: its '/'-separated path relative to it, and its size in bytes. */
export interface IArtifact {
  path: string;
  size: number;
}

/** job.json, as `GET /jupyter-promote/jobs` returns it. */
export interface IJobRecord {
  id: string;
  notebook: string;
  target: string;
  kernel: string;
  state: JobState;
  reason: string | null;
  message: string | null;
  parameters: Record<string, unknown>;
  resources: Record<string, number | null>;
  monitor: Record<string, unknown>;
  metrics: Record<string, unknown>;
  image: { ref: string; built?: boolean; digest?: string | null } | null;
  lock_hash: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
  sweep: { id: string; index: number; size: number } | null;
  parity: { verdict: string; failed?: string[] } | null;
  /** The files the job wrote (`GET jobs/{id}` always has them; a listing may not). */
  artifacts?: IArtifact[];
  [field: string]: unknown;
}

/** The stages a person sees on a job's timeline, in the order they happen. */
export type StageName = 'freezing' | 'building' | 'pushing' | 'queued' | 'running' | 'finished';

export interface IStage {
  name: StageName;
  start: number;
  /** When the next stage began (null: still in this stage). */
  end: number | null;
}

/** One point of a chart: seconds since the epoch, value. */
export interface IPoint {
  t: number;
  v: number;
}

export interface ISeries {
  stepsPerS: IPoint[];
  /** metric name -> its reported values over time (numbers only) */
  metrics: Record<string, IPoint[]>;
  /** "GPU 0" -> memory in use (bytes) over time */
  gpuMemory: Record<string, IPoint[]>;
}

/** What the sidebar knows of one job. Treat as immutable: folding returns a new view. */
export interface IJobView {
  id: string;
  record: IJobRecord;
  state: JobState;
  reason: string | null;
  message: string | null;
  /** The last event folded in; events with seq <= this are replays and are ignored. */
  seq: number;
  cellNumber: number | null;
  cellsTotal: number | null;
  cellsDone: number;
  steps: number;
  stepsPerS: number | null;
  alerts: IJobEvent[];
  metrics: Record<string, unknown>;
  startedAt: number | null;
  finishedAt: number | null;
  stages: IStage[];
  series: ISeries;
  failedCell: Record<string, unknown> | null;
}

/** A chart keeps at most this many points per series; older ones are dropped. */
export const MAX_POINTS = 2000;

/** A view seeded from a job record alone (before any event is folded in). */
export function viewOf(record: IJobRecord): IJobView {
  return {
    id: record.id,
    record,
    state: record.state,
    reason: record.reason,
    message: record.message,
    seq: 0,
    cellNumber: null,
    cellsTotal: null,
    cellsDone: 0,
    steps: 0,
    stepsPerS: null,
    alerts: [],
    metrics: { ...(record.metrics ?? {}) },
    startedAt: record.started_at,
    finishedAt: record.finished_at,
    stages: [],
    series: { stepsPerS: [], metrics: {}, gpuMemory: {} },
    failedCell: null
  };
}

/** A newer record of the same job (a reload, a GET): keeps what the events told, takes the record's state. */
export function withRecord(view: IJobView, record: IJobRecord): IJobView {
  const keepState = isFinal(view.state) && !isFinal(record.state);
  return {
    ...view,
    record,
    state: keepState ? view.state : record.state,
    reason: keepState ? view.reason : record.reason,
    message: keepState ? view.message : record.message,
    metrics: { ...view.metrics, ...(record.metrics ?? {}) },
    startedAt: view.startedAt ?? record.started_at,
    finishedAt: view.finishedAt ?? record.finished_at
  };
}

function append(points: IPoint[], point: IPoint): IPoint[] {
  const next = points.length >= MAX_POINTS ? points.slice(1) : points.slice();
  next.push(point);
  return next;
}

/** The stage a status event starts, or null when it continues the current one. */
function stageOf(event: IJobEvent): StageName | null {
  const state = event.state as string;
  if (state === 'pending' || state === 'building') {
    const message = String(event.message ?? '');
    if (/push/i.test(message)) {
      return 'pushing';
    }
    if (/image|build/i.test(message) || state === 'building') {
      return 'building';
    }
    if (/freez/i.test(message)) {
      return 'freezing';
    }
    return null;
  }
  if (state === 'queued') {
    return 'queued';
  }
  if (state === 'running') {
    return 'running';
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
 * Fold one event into a view. Returns the same view for an event already folded (seq <= view.seq),
 * so replays after a reconnect or a reload change nothing; a final state is never undone.
 */
export function foldEvent(view: IJobView, event: IJobEvent): IJobView {
  if (event.seq <= view.seq) {
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
      }
      break;
    }
    case 'image':
      if (event.ref) {
        next.record = { ...view.record, image: { ref: event.ref, built: event.built, digest: event.digest } };
      }
      break;
    case 'cell':
      // the notebook's own cells (own_*), not the injected ones, when the runner says which they are
      next.cellsTotal = ((event.own_total ?? event.total) as number) ?? view.cellsTotal;
      if (event.injected && event.own_total !== undefined) {
        break;
      }
      if (event.phase === 'start') {
        next.cellNumber = ((event.own_number ?? event.number) as number) ?? null;
      } else if (event.phase === 'end' && event.ok) {
        next.cellsDone = view.cellsDone + 1;
      } else if (event.phase === 'error') {
        next.failedCell = {
          number: event.own_number ?? event.number,
          ename: event.ename,
          evalue: event.evalue,
          source: event.source
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
      next.steps = Math.max(view.steps, (event.steps as number) || 0);
      break;
    case 'metric': {
      const reported = (event.metrics ?? {}) as Record<string, unknown>;
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
      for (const device of (event.devices ?? []) as Record<string, number>[]) {
        const used = device.memory_used ?? device.reserved ?? device.allocated;
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
  }
  return next;
}

/** Fold events in order (they may repeat or overlap what the view already has). */
export function foldEvents(view: IJobView, events: IJobEvent[]): IJobView {
  return events.reduce(foldEvent, view);
}

/** Whether a bus message starting at `firstSeq` leaves a gap after what the view has folded. */
export function hasGap(view: IJobView, firstSeq: number): boolean {
  return firstSeq > view.seq + 1;
}

/** Seconds from the job's start to its end (or to `now` while it runs); null before it starts. */
export function duration(view: IJobView, now: number): number | null {
  const start = view.startedAt ?? view.record.started_at;
  if (start === null || start === undefined) {
    return null;
  }
  const end = view.finishedAt ?? view.record.finished_at ?? now;
  return Math.max(0, end - start);
}

/** "42 s", "3 min 5 s", "1 h 2 min". */
export function formatDuration(seconds: number | null): string {
  if (seconds === null) {
    return '';
  }
  const s = Math.round(seconds);
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${s % 60} s`;
  }
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The jobs in display order: newest first, the tasks of one sweep together (by index) under their sweep. */
export interface IJobGroup {
  /** The sweep id, or null for a single job. */
  sweep: string | null;
  jobs: IJobView[];
}

export function groupJobs(views: IJobView[]): IJobGroup[] {
  const newest = [...views].sort((a, b) => b.record.created_at - a.record.created_at);
  const groups: IJobGroup[] = [];
  const bySweep = new Map<string, IJobGroup>();
  for (const view of newest) {
    const sweep = view.record.sweep?.id ?? null;
    if (sweep === null) {
      groups.push({ sweep: null, jobs: [view] });
      continue;
    }
    let group = bySweep.get(sweep);
    if (!group) {
      group = { sweep, jobs: [] };
      bySweep.set(sweep, group);
      groups.push(group);
    }
    group.jobs.push(view);
  }
  for (const group of bySweep.values()) {
    group.jobs.sort((a, b) => (a.record.sweep?.index ?? 0) - (b.record.sweep?.index ?? 0));
  }
  return groups;
}

/** A parameter's edited text as the JSON value to send, typed as the notebook's default is. */
export function parseParameter(type: string, text: string): unknown {
  const trimmed = text.trim();
  switch (type) {
    case 'int':
    case 'float': {
      const n = Number(trimmed);
      if (trimmed === '' || !Number.isFinite(n) || (type === 'int' && !Number.isInteger(n))) {
        throw new Error(`not ${type === 'int' ? 'a whole number' : 'a number'}`);
      }
      return n;
    }
    case 'bool':
      if (trimmed === 'True' || trimmed === 'true') {
        return true;
      }
      if (trimmed === 'False' || trimmed === 'false') {
        return false;
      }
      throw new Error('not True or False');
    case 'str':
      return text;
    default:
      try {
        return JSON.parse(trimmed);
      } catch {
        return text;
      }
  }
}

/** A parameter value as a person edits it (Python's spelling for booleans). */
export function parameterText(type: string, value: unknown): string {
  if (type === 'bool') {
    return value ? 'True' : 'False';
  }
  if (type === 'str' && typeof value === 'string') {
    return value;
  }
  return JSON.stringify(value);
}

/** What an alert means and where to look first, by its kind. */
export const ALERT_EXPLANATIONS: Record<string, string> = {
  nan: 'A loss or gradient became NaN or Inf. Usual causes: a learning rate too high, a bad batch, fp16 overflow, or a different library version than the notebook used.',
  stall:
    'No optimizer step and no cell progress for the stall timeout: a deadlock, a hung data loader or collective, or a wait on I/O. The Python stacks were saved in the run directory.',
  throughput_drop:
    "Steps per second fell well below this run's own baseline: contention from neighbours, thermal throttling, swapping, or a slower data path.",
  memory:
    'GPU memory is under pressure or fragmented: the next larger allocation may fail. Try a smaller batch, or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.',
  nondeterministic_op:
    'An operation has no deterministic implementation: replicas of this job may differ even with the same seed.',
  kernel_start: 'The kernel died before its first reply and was started again (an overloaded or memory-starved node).'
};

export function explainAlert(kind: string): string {
  return ALERT_EXPLANATIONS[kind] ?? 'The in-job monitor raised this alert.';
}
