import { Event, ServerConnection } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

import { IJobEvent, IJobRecord } from '../api/jobs';
import { JOBS_PAGE, PromoteService } from '../api/service';
import { CATCH_UP_AT_ONCE, JobsModel } from '../jobs';
import { Gate } from '../job/gate';
import { emptyRecord } from '../job/view';

/** A job's record as the server lists it, the newest first when `created_at` is larger. */
function record(id: string, state: IJobRecord['state'], createdAt: number): IJobRecord {
  return { ...emptyRecord(id), notebook: '/home/me/train.ipynb', target: 'local', state, created_at: createdAt };
}

/**
 * A JobsModel over a server that is a function of the path and query (`GET jobs` pages over `records`,
 * `GET jobs/{id}/events` answered by `events`), with an event bus that says nothing; the paths it was asked.
 */
function modelOver(
  records: IJobRecord[],
  events: (id: string, after: number) => Promise<IJobEvent[]> = async () => []
): { model: JobsModel; asked: string[] } {
  const asked: string[] = [];
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/',
    wsUrl: 'ws://localhost:8888/',
    token: '',
    fetch: (async (request: Request) => {
      const url = new URL(request.url);
      const path = url.pathname.replace('/jupyter-promote/', '');
      const query = url.searchParams;
      asked.push(`${path}${url.search.replace(/[?&]\d+$/, '')}`); // less makeRequest's cache buster
      const job = /^jobs\/([^/]+)\/events$/.exec(path);
      if (job) {
        return new Response(JSON.stringify({ events: await events(job[1], Number(query.get('after'))) }));
      }
      const limit = Math.min(Number(query.get('limit')), JOBS_PAGE);
      const offset = Number(query.get('offset') ?? 0);
      const page = records.slice(offset, offset + limit);
      return new Response(JSON.stringify({ jobs: page, total: records.length, limit, offset }));
    }) as typeof fetch
  });
  const bus = { stream: new Signal<unknown, Event.Emission>({}) } as unknown as Event.IManager;
  return { model: new JobsModel(new PromoteService(settings), bus), asked };
}

const listed = (asked: string[]): string[] => asked.filter(path => path.startsWith('jobs?'));

describe('JobsModel', () => {
  it('loads the newest page, says how many older jobs are not loaded, and loads them page by page', async () => {
    // Given 450 finished jobs on the server (its pages hold 200)
    const records = Array.from({ length: 450 }, (_, i) => record(`j${i}`, 'succeeded', 1000 - i));
    const { model, asked } = modelOver(records);
    // When the list loads, then the older jobs are shown twice
    await model.refresh();
    expect([model.views.length, model.older]).toEqual([200, 250]);
    await model.loadOlder();
    expect([model.views.length, model.older]).toEqual([400, 50]);
    // a job created meanwhile shifts the pages: the next page repeats one job and misses none
    records.unshift(record('new', 'succeeded', 2000));
    await model.loadOlder();
    // Then every job is in the list once, nothing is said to be missing, and finished jobs were not caught up
    expect([model.views.length, model.older, model.get('j449')?.id]).toEqual([450, 0, 'j449']);
    expect(listed(asked)).toEqual([
      'jobs?limit=200&offset=0',
      'jobs?limit=200&offset=200',
      'jobs?limit=200&offset=400'
    ]);
    expect(asked.filter(path => path.includes('/events'))).toEqual([]);
    model.dispose();
  });

  it('skips no older job when loaded jobs are deleted between pages, and one failed catch-up fails no load', async () => {
    // Given 450 jobs, the newest page loaded, and the live one among the older ones failing its catch-up
    const records = Array.from({ length: 450 }, (_, i) =>
      record(`j${i}`, i === 300 ? 'running' : 'succeeded', 1000 - i)
    );
    const { model } = modelOver(records, async id => {
      throw new Error(`no events for ${id}`);
    });
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    await model.refresh();
    // When five loaded jobs are deleted (on the server, then forgotten here) and the older jobs are loaded
    for (const id of ['j0', 'j1', 'j2', 'j3', 'j4']) {
      records.splice(
        records.findIndex(r => r.id === id),
        1
      );
      model.forget(id);
    }
    await model.loadOlder();
    await model.loadOlder();
    // Then every job still on the server is listed, and the failed catch-up was only reported
    expect([model.views.length, model.older, model.get('j200')?.id]).toEqual([445, 0, 'j200']);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('j300'));
    warn.mockRestore();
    model.dispose();
  });

  it(`catches up at most ${CATCH_UP_AT_ONCE} live jobs at once, a job a person opens before the others`, async () => {
    // Given 40 running jobs, each with one event the list has not seen, answered after a few ms
    const records = Array.from({ length: 40 }, (_, i) => record(`j${i}`, 'running', 1000 - i));
    let inFlight = 0;
    let most = 0;
    const { model, asked } = modelOver(records, async (id, after) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise(resolve => setTimeout(resolve, 5));
      inFlight -= 1;
      const event = { seq: 1, ts: 100, job: id, type: 'status', state: 'running', stage: 'running' };
      return after < 1 ? [event] : [];
    });
    // When the list loads and, once the first page is in, a person opens the oldest job
    let opened: Promise<void> | null = null;
    model.changed.connect(() => {
      opened ??= new Promise<void>(resolve => setTimeout(resolve, 0)).then(() => model.catchUp('j39'));
    });
    await model.refresh();
    await opened;
    // Then no more than the bound were asked at once, the opened job right after the first ones, and every
    // job is caught up once (the opened job's own turn finds nothing new)
    const eventPaths = asked.filter(path => path.includes('/events'));
    expect(most).toBe(CATCH_UP_AT_ONCE);
    expect(eventPaths[CATCH_UP_AT_ONCE]).toBe('jobs/j39/events?after=0');
    expect(eventPaths.filter(path => path === 'jobs/j39/events?after=1')).toHaveLength(1);
    expect(eventPaths).toHaveLength(41);
    expect(model.views.every(view => view.seq === 1)).toBe(true);
    model.dispose();
  });
});

describe('Gate', () => {
  it('passes on a failed task and runs the next one', async () => {
    const gate = new Gate(1);
    const failed = gate.run(() => Promise.reject(new Error('no')));
    const thrown = gate.run(() => {
      throw new Error('at once');
    });
    const next = gate.run(async () => 'next');
    await expect(failed).rejects.toThrow('no');
    await expect(thrown).rejects.toThrow('at once');
    await expect(next).resolves.toBe('next');
    expect([gate.running, gate.waiting]).toEqual([0, 0]);
  });
});
