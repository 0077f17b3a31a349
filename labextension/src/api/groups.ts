/**
 * `GET sweeps/{id}`: the summary of a group of jobs (a sweep, replicas or seeds, a contention test) as
 * the REST API answers it. Types only.
 */

import { GroupKind } from './jobs';

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
