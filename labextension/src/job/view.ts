/**
 * What the sidebar knows of one job (`IJobView`), seeded from its record, refreshed by a newer record,
 * and written as canonical JSON (the golden event streams' `view`). Pure, no JupyterLab import.
 */

import { IArtifact, IJobEvent, IJobRecord, JobState } from '../api/jobs';

const FINAL_STATES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);

/** Whether a job in this state will never change again. */
export function isFinal(state: string): boolean {
  return FINAL_STATES.has(state);
}

/** The stages a person sees on a job's timeline, in the order they happen (the `stage` of status events). */
export type StageName = 'freezing' | 'building' | 'pushing' | 'queued' | 'running' | 'finished';

export const STAGE_NAMES: StageName[] = ['freezing', 'building', 'pushing', 'queued', 'running', 'finished'];

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

/** The environment image a job runs in, as its record or its last `image` event with a ref says. */
export interface IJobImage {
  ref: string;
  built: boolean | null;
  digest: string | null;
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
  /** The name of the last stage, or null before any. */
  stage: StageName | null;
  /** The notebook's own code cell running (1-based), as the runner counts them (without injected cells). */
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
  /** The files the job wrote, as its last `artifacts` event (or its record) listed them. */
  artifacts: IArtifact[];
  image: IJobImage | null;
  /** Which attempt the job is in: 1, or more once an infrastructure failure was retried. */
  attempt: number;
}

/** A chart keeps at most this many points per series; older ones are dropped. */
export const MAX_POINTS = 2000;

function imageOf(image: IJobRecord['image']): IJobImage | null {
  return image ? { ref: image.ref, built: image.built ?? null, digest: image.digest ?? null } : null;
}

/** A view seeded from a job record alone (before any event is folded in). */
export function viewOf(record: IJobRecord): IJobView {
  return {
    id: record.id,
    record,
    state: record.state,
    reason: record.reason,
    message: record.message,
    seq: 0,
    stage: null,
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
    failedCell: null,
    artifacts: [...(record.artifacts ?? [])],
    image: imageOf(record.image),
    attempt: typeof record.attempt === 'number' ? record.attempt : 1
  };
}

/** The record of a job nothing is known of yet: pending, everything else empty. */
export function emptyRecord(id: string): IJobRecord {
  return {
    id,
    notebook: '',
    target: '',
    kernel: '',
    state: 'pending',
    reason: null,
    message: null,
    parameters: {},
    resources: {},
    monitor: {},
    deterministic: false,
    metrics: {},
    image: null,
    lock_hash: null,
    created_at: 0,
    started_at: null,
    finished_at: null,
    updated_at: 0,
    sweep: null,
    parity: null
  };
}

/** The view of a job nothing is known of yet: pending, seq 0, everything else empty (what golden streams fold from). */
export function emptyView(id: string): IJobView {
  return viewOf(emptyRecord(id));
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
    finishedAt: view.finishedAt ?? record.finished_at,
    artifacts: view.artifacts.length > 0 ? view.artifacts : [...(record.artifacts ?? [])],
    image: view.image ?? imageOf(record.image),
    attempt: Math.max(view.attempt, typeof record.attempt === 'number' ? record.attempt : 1)
  };
}

/** A view as canonical JSON (contract section 5): what the golden event streams hold, key for key. */
export interface IViewJson {
  state: string;
  reason: string | null;
  message: string | null;
  seq: number;
  stage: string | null;
  stages: { name: string; start: number; end: number | null }[];
  cell_number: number | null;
  cells_total: number | null;
  cells_done: number;
  failed_cell: { number: unknown; ename: unknown; evalue: unknown; source: unknown } | null;
  steps: number;
  steps_per_s: number | null;
  alerts: { kind: string; message: unknown }[];
  metrics: Record<string, unknown>;
  started_at: number | null;
  finished_at: number | null;
  artifacts: { path: string; size: number }[];
  image: { ref: unknown; built: unknown; digest: unknown } | null;
  attempt: number;
}

/** The canonical JSON of a view: snake_case keys, exactly those the server's `JobView.to_json()` writes. */
export function viewJson(view: IJobView): IViewJson {
  const failed = view.failedCell;
  return {
    state: view.state,
    reason: view.reason,
    message: view.message,
    seq: view.seq,
    stage: view.stage,
    stages: view.stages.map(s => ({ name: s.name, start: s.start, end: s.end })),
    cell_number: view.cellNumber,
    cells_total: view.cellsTotal,
    cells_done: view.cellsDone,
    failed_cell: failed
      ? {
          number: failed.number ?? null,
          ename: failed.ename ?? null,
          evalue: failed.evalue ?? null,
          source: failed.source ?? null
        }
      : null,
    steps: view.steps,
    steps_per_s: view.stepsPerS,
    alerts: view.alerts.map(a => ({ kind: a.kind as string, message: a.message ?? null })),
    metrics: { ...view.metrics },
    started_at: view.startedAt,
    finished_at: view.finishedAt,
    artifacts: view.artifacts.map(a => ({ path: a.path, size: a.size })),
    image: view.image ? { ref: view.image.ref, built: view.image.built, digest: view.image.digest } : null,
    attempt: view.attempt
  };
}
