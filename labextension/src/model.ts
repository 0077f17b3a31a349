/**
 * Fold a job's events, in seq order, into what the sidebar shows: state, stages, progress, alerts,
 * metrics and the series behind the charts. Pure functions with no JupyterLab import, so Jest tests
 * them directly; the same rules as `jupyter_promote/events/fold.py` on the server.
 */

export type JobState = 'pending' | 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const JOB_STATES: JobState[] = ['pending', 'queued', 'running', 'succeeded', 'failed', 'cancelled'];

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
  /** Seeded, with deterministic algorithms pinned (a rerun keeps it; records from before it was kept read false). */
  deterministic: boolean;
  metrics: Record<string, unknown>;
  image: { ref: string; built?: boolean | null; digest?: string | null; [field: string]: unknown } | null;
  lock_hash: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
  /** The group the job belongs to (a sweep, replicas or seeds, a contention test), or null. */
  sweep: { id: string; index: number; size: number; kind?: GroupKind } | null;
  parity: { verdict: string; failed?: string[] } | null;
  /** The files the job wrote (`GET jobs/{id}` always has them; a listing may not). */
  artifacts?: IArtifact[];
  [field: string]: unknown;
}

/** What made a group of jobs: a sweep's grid, replicas or seeds of one job, or a contention test. */
export type GroupKind = 'grid' | 'replicas' | 'contention';

/** The stages a person sees on a job's timeline, in the order they happen (the `stage` of status events). */
export type StageName = 'freezing' | 'building' | 'pushing' | 'queued' | 'running' | 'finished';

export const STAGE_NAMES: StageName[] = ['freezing', 'building', 'pushing', 'queued', 'running', 'finished'];

/** The event types the server writes (`EVENT_TYPES` of jupyter_promote/runtime/events.py). */
export const EVENT_TYPES: ReadonlySet<string> = new Set([
  'status',
  'image',
  'cell',
  'heartbeat',
  'step',
  'metric',
  'gpu',
  'alert',
  'artifacts'
]);

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
    image: imageOf(record.image)
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
    image: view.image ?? imageOf(record.image)
  };
}

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

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A finite number (JSON's `true` is no number; 1e999 parses to Infinity, which is none either). */
function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** A whole number, not a boolean (JSON's `true` is no seq, no size). */
function isInteger(value: unknown): value is number {
  return isNumber(value) && Number.isInteger(value);
}

type Check = (value: unknown) => boolean;

const isCount: Check = value => isInteger(value) && value >= 0;
const isText: Check = value => typeof value === 'string';

/** A field that may also be missing or null. */
function optional(check: Check): Check {
  return value => value === undefined || value === null || check(value);
}

/** What `promote.report` writes: names to finite numbers, booleans or text (NaN as "nan"). */
const isMetrics: Check = value =>
  isObject(value) &&
  Object.values(value).every(v => v === null || isNumber(v) || typeof v === 'string' || typeof v === 'boolean');

const isFiles: Check = value =>
  Array.isArray(value) && value.every(f => isObject(f) && typeof f.path === 'string' && isCount(f.size));

const TEXT: [Check, string] = [optional(isText), 'a string'];
const COUNT: [Check, string] = [optional(isCount), 'a whole number >= 0'];

/**
 * Every field a fold reads, by event type: the check it must pass and what it must be, in words. The
 * same table as `_FIELDS` of jupyter_promote/events/fold.py.
 */
const FIELDS: Record<string, [string, Check, string][]> = {
  status: [
    ['reason', ...TEXT],
    ['message', ...TEXT]
  ],
  image: [
    ['ref', ...TEXT],
    ['built', optional(value => typeof value === 'boolean'), 'true, false or null'],
    ['digest', ...TEXT]
  ],
  cell: [
    ['number', ...COUNT],
    ['own_number', ...COUNT],
    ['total', ...COUNT],
    ['own_total', ...COUNT],
    ['source', ...TEXT],
    ['ename', ...TEXT],
    ['evalue', ...TEXT]
  ],
  step: [
    ['steps', ...COUNT],
    ['steps_per_s', optional(value => isNumber(value) && value >= 0), 'a finite number >= 0']
  ],
  heartbeat: [['steps', ...COUNT]],
  metric: [['metrics', isMetrics, 'an object of finite numbers, booleans and strings']],
  gpu: [['devices', optional(value => Array.isArray(value) && value.every(isObject)), 'a list of objects']],
  alert: [
    ['kind', isText, 'a string'],
    ['message', ...TEXT]
  ],
  artifacts: [['files', isFiles, 'a list of {path: string, size: whole number >= 0}']]
};

function shown(value: unknown): string {
  const text = String(JSON.stringify(value));
  return text.length <= 40 ? text : `${text.slice(0, 37)}...`;
}

/**
 * Why an event cannot be folded (one line), or null: the same rule as `problem()` of
 * jupyter_promote/events/fold.py, field for field. Such events are ignored: they move neither seq nor
 * the state.
 */
export function problem(event: unknown): string | null {
  if (!isObject(event) || !('ts' in event) || ('job' in event && typeof event.job !== 'string')) {
    return 'not written by jupyter-promote (no ts)';
  }
  const kind = event.type;
  if (typeof kind !== 'string' || !EVENT_TYPES.has(kind)) {
    return `unknown type ${shown(kind)}`;
  }
  const seq = event.seq;
  if (!isInteger(seq) || seq < 1) {
    return `seq ${shown(seq)} is not a positive whole number`;
  }
  if (!isNumber(event.ts)) {
    return `ts ${shown(event.ts)} is not a finite number`;
  }
  if (kind === 'status' && !(JOB_STATES as unknown[]).includes(event.state)) {
    return `unknown state ${shown(event.state)}`;
  }
  for (const [name, check, what] of FIELDS[kind] ?? []) {
    if (!check(event[name])) {
      const article = 'aeiou'.includes(kind[0]) ? 'an' : 'a';
      return `${article} ${kind} event whose ${name} is not ${what}: ${shown(event[name])}`;
    }
  }
  return null;
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
  }
  return next;
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
    image: view.image ? { ref: view.image.ref, built: view.image.built, digest: view.image.digest } : null
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
