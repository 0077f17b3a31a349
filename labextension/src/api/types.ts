/**
 * The shapes of the jupyter-promote REST API (jupyter_promote/server/openapi.yaml) that the client
 * sends and reads: the request bodies are the generated schema's (./schema.ts), the answers are
 * declared here. Types only.
 */

import { GroupKind, IArtifact, IJobRecord } from './jobs';
import { components, paths } from './schema';

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

/** The body of `POST freeze`: generated from openapi.yaml. */
export type IFreezeRequest = paths['/jupyter-promote/freeze']['post']['requestBody']['content']['application/json'];

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

/** The body of `POST jobs`: generated from components/schemas/JobRequest of openapi.yaml (`jlpm build:types`). */
export type IPromoteRequest = components['schemas']['JobRequest'];

/** What a request asks of the target's resources (the schema's `resources`). */
export type IRequestResources = NonNullable<IPromoteRequest['resources']>;

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

/** The body of `POST schedules`: a job request and when to fire it (components/schemas/ScheduleRequest). */
export type IScheduleRequest = components['schemas']['ScheduleRequest'];

/** The body of `PATCH schedules/{id}`: a pause or resume, or a changed cron expression, time zone or policy. */
export type IScheduleUpdate = components['schemas']['ScheduleUpdate'];

/** The body of `POST schedules/preview`: a cron expression and a time zone. */
export type ISchedulePreviewRequest = components['schemas']['SchedulePreview'];

/** What a schedule does about missed due times, and about a due time while its previous job still runs. */
export type MissedPolicy = NonNullable<IScheduleRequest['missed']>;
export type OverlapPolicy = NonNullable<IScheduleRequest['overlap']>;

/** One schedule, as `GET schedules` and the other schedule routes return it. */
export interface ISchedule {
  id: string;
  name: string;
  /** The notebook's absolute path on the server. */
  notebook: string;
  request: IPromoteRequest;
  cron: string;
  timezone: string;
  paused: boolean;
  missed: MissedPolicy;
  overlap: OverlapPolicy;
  freeze: NonNullable<IScheduleRequest['freeze']>;
  created_at: number;
  next_due: number | null;
  /** The next due time, ISO 8601 in the schedule's time zone. */
  next_due_at: string | null;
  last_fired: number;
  last_fired_at: string | null;
  queued: number | null;
  skipped: number;
  last_job: string | null;
  /** The last thing the scheduler said about it (missed runs, a skipped due time, a failure). */
  note: string;
  /** The next five due times, ISO 8601 in its time zone ([] while paused). */
  next: string[];
}
