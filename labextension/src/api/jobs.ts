/**
 * The shapes of a job as the jupyter-promote REST API and its event bus carry them: job.json and
 * events (see jupyter_promote/server/openapi.yaml). Types only, with the job states the server writes.
 */

export type JobState = 'pending' | 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const JOB_STATES: JobState[] = ['pending', 'queued', 'running', 'succeeded', 'failed', 'cancelled'];

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

/** One page of `GET /jupyter-promote/jobs` (newest first): its records, and how many jobs the server has. */
export interface IJobsPage {
  jobs: IJobRecord[];
  total: number;
  limit: number;
  offset: number;
}

/** What made a group of jobs: a sweep's grid, replicas or seeds of one job, or a contention test. */
export type GroupKind = 'grid' | 'replicas' | 'contention';
