import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { artifactEndPoint } from '../artifacts';
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

  private call<T>(endPoint: string, init: RequestInit = {}): Promise<T> {
    return requestAPI<T>(endPoint, init, this.serverSettings);
  }
}
