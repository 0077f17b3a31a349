import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { artifactEndPoint, reportEndPoint } from '../artifacts';
import { ISweepSummary } from './groups';
import { IJobEvent, IJobsPage } from './jobs';
import { requestAPI, requestBlob } from './request';

export { PromoteRequestError } from './request';
import {
  IFreezePreview,
  IFreezeRequest,
  IJobDetail,
  INotifications,
  IPromoteRequest,
  IPromoteResponse,
  ISchedule,
  IScheduleRequest,
  IScheduleUpdate,
  ITarget
} from './types';

/** The largest page of `GET jobs` the server gives (its MAX_PAGE). */
export const JOBS_PAGE = 200;

/** The jupyter-promote REST API, typed: one method per route. */
export class PromoteService {
  constructor(readonly serverSettings: ServerConnection.ISettings) {}

  async targets(): Promise<ITarget[]> {
    return (await this.call<{ targets: ITarget[] }>('targets')).targets;
  }

  /** One page of the jobs, newest first: at most `limit` (the server gives 200 at most) from `offset`. */
  jobs(limit = JOBS_PAGE, offset = 0): Promise<IJobsPage> {
    return this.call<IJobsPage>(`jobs?limit=${limit}&offset=${offset}`);
  }

  job(id: string): Promise<IJobDetail> {
    return this.call<IJobDetail>(`jobs/${id}`);
  }

  async events(id: string, after = 0): Promise<IJobEvent[]> {
    return (await this.call<{ events: IJobEvent[] }>(`jobs/${id}/events?after=${after}`)).events;
  }

  logs(id: string, after = 0, stream: 'job' | 'build' = 'job'): Promise<{ text: string; offset: number }> {
    return this.call(`jobs/${id}/logs?after=${after}&stream=${stream}`);
  }

  output(id: string): Promise<Record<string, unknown>> {
    return this.call(`jobs/${id}/output`);
  }

  /**
   * What a promote would use: the environment of `kernel` (the notebook's own when omitted), and the
   * pre-flight checks as a job on `target` (the server's default when omitted) would meet them.
   */
  freeze(notebook: string, kernel?: string, gpus?: number, target?: string): Promise<IFreezePreview> {
    const body: IFreezeRequest = { notebook };
    if (kernel) {
      body.kernel = kernel;
    }
    if (gpus !== undefined) {
      body.gpus = gpus;
    }
    if (target) {
      body.target = target;
    }
    return this.call('freeze', { method: 'POST', body: JSON.stringify(body) });
  }

  /** The address of one of a job's artifacts (for a link; `artifact()` fetches it authenticated). */
  artifactUrl(id: string, path: string): string {
    return URLExt.join(this.serverSettings.baseUrl, 'jupyter-promote', artifactEndPoint(id, path));
  }

  /** The bytes of one of a job's artifacts. */
  artifact(id: string, path: string): Promise<Blob> {
    return requestBlob(artifactEndPoint(id, path), this.serverSettings);
  }

  /** The address of a finished job's report, for a link that opens it (or, with `download`, saves it). */
  reportUrl(id: string, download = false): string {
    return URLExt.join(this.serverSettings.baseUrl, 'jupyter-promote', reportEndPoint(id, download));
  }

  submit(request: IPromoteRequest): Promise<IPromoteResponse> {
    return this.call('jobs', { method: 'POST', body: JSON.stringify(request) });
  }

  /** The summary of a group of jobs (a sweep, replicas or seeds, a contention test). */
  sweep(id: string): Promise<ISweepSummary> {
    return this.call(`sweeps/${encodeURIComponent(id)}`);
  }

  cancel(id: string): Promise<{ id: string; state: string }> {
    return this.call(`jobs/${id}`, { method: 'DELETE' });
  }

  /** Delete a finished job: its record, events and run directory (the server refuses a live job: 409). */
  async remove(id: string): Promise<void> {
    await this.call(`jobs/${encodeURIComponent(id)}?purge=true`, { method: 'DELETE' });
  }

  /** The notification destinations a job may name (names and kinds only), and those notified by default. */
  notifications(): Promise<INotifications> {
    return this.call('notifications');
  }

  rerun(id: string): Promise<{ id: string }> {
    return this.call(`jobs/${id}/rerun`, { method: 'POST', body: '{}' });
  }

  /** This user's schedules, each with its next five due times. */
  async schedules(): Promise<ISchedule[]> {
    return (await this.call<{ schedules: ISchedule[] }>('schedules')).schedules;
  }

  /** Create a schedule (a 400 names the field it refuses; a name taken is a 409); answers with it. */
  createSchedule(body: IScheduleRequest): Promise<ISchedule> {
    return this.call('schedules', { method: 'POST', body: JSON.stringify(body) });
  }

  /** The next five due times of `cron` in `timezone`, as ISO 8601 (a 400 says what is wrong); creates nothing. */
  async previewSchedule(cron: string, timezone: string): Promise<string[]> {
    const body = { cron, timezone };
    return (await this.call<{ next: string[] }>('schedules/preview', { method: 'POST', body: JSON.stringify(body) }))
      .next;
  }

  /** Pause or resume a schedule, or change its cron expression, time zone or policies. */
  updateSchedule(id: string, change: IScheduleUpdate): Promise<ISchedule> {
    return this.call(`schedules/${encodeURIComponent(id)}`, { method: 'PATCH', body: JSON.stringify(change) });
  }

  /** Fire a schedule now (whatever its pause or overlap policy): the job's id. */
  runSchedule(id: string): Promise<{ id: string }> {
    return this.call(`schedules/${encodeURIComponent(id)}/run`, { method: 'POST', body: '{}' });
  }

  /** Delete a schedule; the jobs it fired stay. */
  async deleteSchedule(id: string): Promise<void> {
    await this.call(`schedules/${encodeURIComponent(id)}`, { method: 'DELETE' });
  }

  /** The newest `limit` jobs a schedule fired, newest first. */
  scheduleJobs(id: string, limit = 20): Promise<IJobsPage> {
    return this.call<IJobsPage>(`jobs?schedule=${encodeURIComponent(id)}&limit=${limit}`);
  }

  private call<T>(endPoint: string, init: RequestInit = {}): Promise<T> {
    return requestAPI<T>(endPoint, init, this.serverSettings);
  }
}
