import { ServerConnection } from '@jupyterlab/services';

import { IJobEvent, IJobRecord } from './model';
import { requestAPI } from './request';

export { PromoteRequestError } from './request';
import { IFreezePreview, IJobDetail, IPromoteRequest, ITarget } from './tokens';

/** The jupyter-promote REST API, typed: one method per route. */
export class PromoteService {
  constructor(readonly serverSettings: ServerConnection.ISettings) {}

  async targets(): Promise<ITarget[]> {
    return (await this.call<{ targets: ITarget[] }>('targets')).targets;
  }

  async jobs(limit = 200): Promise<IJobRecord[]> {
    return (await this.call<{ jobs: IJobRecord[] }>(`jobs?limit=${limit}`)).jobs;
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

  freeze(notebook: string): Promise<IFreezePreview> {
    return this.call('freeze', { method: 'POST', body: JSON.stringify({ notebook }) });
  }

  submit(request: IPromoteRequest): Promise<{ id: string; sweep?: string; ids?: string[] }> {
    return this.call('jobs', { method: 'POST', body: JSON.stringify(request) });
  }

  cancel(id: string): Promise<{ id: string; state: string }> {
    return this.call(`jobs/${id}`, { method: 'DELETE' });
  }

  rerun(id: string): Promise<{ id: string }> {
    return this.call(`jobs/${id}/rerun`, { method: 'POST', body: '{}' });
  }

  private call<T>(endPoint: string, init: RequestInit = {}): Promise<T> {
    return requestAPI<T>(endPoint, init, this.serverSettings);
  }
}
