/** The shapes of the jupyter-promote REST API (see jupyter_promote/openapi.yaml). */

import { GroupKind, IArtifact, IJobEvent, IJobRecord } from './model';

/** A target as `GET targets` describes it. */
export interface ITarget {
  name: string;
  display_name: string;
  available: boolean;
  reason: string | null;
  options_schema: {
    properties?: Record<string, { type?: string; description?: string; minimum?: number }>;
  };
}

/** A parameter of the notebook's `parameters` cell, as papermill reads it. */
export interface IParameter {
  name: string;
  type: string;
  /** The default's source text. */
  default: string;
  /** The default as a JSON value, when it is a literal. */
  value: unknown;
  literal: boolean;
  help: string;
}

/** The facts of an environment lock a person compares at a glance. */
export interface IEnvironmentCard {
  content_hash: string;
  python: string | null;
  torch: string | null;
  cuda: string | null;
  cudnn: string | null;
  cpu: string | null;
  gpu: unknown;
  packages: number;
  key_packages: Record<string, string>;
  env: Record<string, string>;
}

/** A kernelspec installed for the server's user, as `POST freeze` lists them. */
export interface IKernelSpec {
  name: string;
  display_name: string;
}

/**
 * One pre-flight finding: something that will differ on the cluster. `kind` is one of order,
 * never_run, undefined, install, path, env, gpu, syntax; `message` names the cell already.
 */
export interface IFinding {
  kind: string;
  message: string;
  /** The cell's number, or null when the finding concerns the whole notebook. */
  cell: number | null;
}

/** The body of `POST freeze`. */
export interface IFreezeRequest {
  notebook: string;
  /** The kernelspec whose environment to preview; omitted = the notebook's own. */
  kernel?: string;
  /** The GPUs the job would ask for (the gpu finding reflects it). */
  gpus?: number;
  /** The target the job would run on (`local` carries the whole environment: no env finding); omitted = the server's default. */
  target?: string;
}

/** `POST freeze`: what a promote would use, building nothing. */
export interface IFreezePreview {
  /** The notebook's own kernelspec name (the dialog's default choice). */
  kernel: string;
  /** The kernelspecs installed for the server's user. */
  kernels: IKernelSpec[];
  /** What will differ on the cluster, found before anything runs. */
  check: { findings: IFinding[] };
  summary: string;
  environment: IEnvironmentCard;
  parameters: IParameter[];
  image: { tag: string; base_image: string; exists: boolean } | null;
  image_error?: string;
}

/** One job, as `GET jobs/{id}` returns it. */
export interface IJobDetail extends IJobRecord {
  run_dir: string | null;
  transitions: { state: string; reason: string | null; ts: number }[];
  environment: IEnvironmentCard | null;
  /** The notebook relative to the server's root (what the contents API takes), or null. */
  notebook_path: string | null;
  /** The files the job wrote in its working directory ('/'-separated paths relative to it). */
  artifacts: IArtifact[];
}

/** The body of `POST jobs`. */
export interface IPromoteRequest {
  notebook: string;
  target: string;
  parameters?: Record<string, unknown>;
  resources?: Record<string, string | number>;
  monitor?: Record<string, string | number>;
  deterministic?: boolean;
  sweep?: Record<string, unknown[]>;
  max_parallel?: number;
  /** The kernelspec to run the job with; omitted = the notebook's own. */
  kernel?: string;
  /** Run the same job this many times (>= 1): a replica group. Not with `sweep` or `contention`. */
  replicas?: number;
  /** One job per seed (non-empty). Not with `sweep` or `contention`. */
  seeds?: number[];
  /** "cpu", "cpu:N", "memory", "memory:SIZE" or "gpu": the job alone and beside that stress workload. */
  contention?: string;
  /** The notification destinations to tell (their names); [] = nobody; omitted = the server's defaults. */
  notify?: string[];
}

/** One notification destination, as `GET notifications` describes it (never its URL or addresses). */
export interface INotifyDestination {
  name: string;
  /** webhook, slack, teams or email */
  kind: string;
  /** What it is told of: succeeded, failed, parity_failed, cancelled, alert. */
  on: string[];
}

/** `GET notifications`: the destinations a job may name, and those a job names when it names none. */
export interface INotifications {
  destinations: INotifyDestination[];
  defaults: string[];
}

/** The answer of `POST jobs`: the job, or for a group (sweep, replicas/seeds, contention) its first job and all. */
export interface IPromoteResponse {
  id: string;
  /** The group's id. */
  sweep?: string;
  ids?: string[];
  kind?: GroupKind;
}

/** The best or worst task of a group for one metric. */
export interface ISweepExtreme {
  value: number;
  index: number;
  parameters: Record<string, unknown>;
}

/** One metric across a group's tasks (numbers only). */
export interface ISweepMetric {
  min: ISweepExtreme;
  max: ISweepExtreme;
  mean: number;
  std: number;
  /** How many tasks reported it. */
  tasks: number;
  /** With repeated seeds: the spread of the per-seed means, and the mean spread within one seed. */
  seed_std?: number;
  replica_std?: number;
}

/** One task of a group. */
export interface ISweepTask {
  index: number;
  job: string;
  state: string;
  parameters: Record<string, unknown>;
  reason: string | null;
  metrics: Record<string, unknown>;
}

/** Where replicas that should agree bit for bit first differ. */
export interface IDivergence {
  step: unknown;
  report: number;
  metric: string | null;
  values: unknown[];
  problem?: string;
}

/** A set of tasks with the same parameters (replicas) that succeeded: whether they agree. */
export interface IReplicaAgreement {
  parameters: Record<string, unknown>;
  tasks: number[];
  identical: boolean;
  first_divergence: IDivergence | null;
}

/** What the monitor saw of one run of a contention test. */
export interface IContentionRun {
  state?: string;
  steps_per_s: number | null;
  peak_rss_bytes?: number | null;
  wall_s?: number | null;
  metrics?: Record<string, unknown>;
}

/** A contention test: the job alone and beside a stress workload. */
export interface IContentionReport {
  stress: { kind: string; level: number; peak_rss_bytes?: number | null };
  isolated: IContentionRun;
  contended: IContentionRun;
  steps_per_s_ratio?: number;
  [field: string]: unknown;
}

/** `GET sweeps/{id}`: a group's summary. */
export interface ISweepSummary {
  id: string;
  kind?: GroupKind;
  notebook: string;
  target: string;
  size: number;
  /** state -> how many tasks are in it */
  states: Record<string, number>;
  metrics: Record<string, ISweepMetric>;
  tasks: ISweepTask[];
  replicas: IReplicaAgreement[];
  /** metric -> the width of the band the seeds span */
  seed_band?: Record<string, number>;
  contention?: IContentionReport | null;
}

/** One message of the `job_events/v1` schema on the server's event bus. */
export interface IJobEventsMessage {
  schema_id: string;
  job: string;
  first_seq: number;
  last_seq: number;
  state?: string;
  /** The events, a JSON array in seq order. */
  events: string;
}

export const JOB_EVENTS_SCHEMA = 'https://events.jupyter.org/jupyter_promote/job_events/v1';

export type { IArtifact, IJobEvent, IJobRecord };
