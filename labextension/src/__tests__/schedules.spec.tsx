/**
 * Schedules in the frontend: the Promote dialog's "On a schedule" choice becomes the exact ScheduleRequest
 * around the job request the form builds, its preview shows the server's next five due times or its one-line
 * refusal, and the sidebar's schedules list each schedule with its runs and acts on it through the right routes.
 */
import { ServerConnection } from '@jupyterlab/services';
import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';

import { PromoteRequestError, PromoteService } from '../api/service';
import { IJobRecord } from '../api/jobs';
import { ISchedule } from '../api/types';
import { PromoteForm } from '../dialog/PromoteForm';
import { ScheduleFields } from '../dialog/schedule';
import { emptyForm, toRequest } from '../form/form';
import { dueText, emptySchedule, IScheduleForm, scheduleFieldOf, toScheduleRequest } from '../form/schedule';
import { emptyRecord } from '../job/view';
import { SchedulesModel } from '../schedules';
import { ScheduleList } from '../sidebar/Schedules';

interface ISent {
  method: string;
  path: string;
  body: unknown;
}

/** A service whose server is a function of the method and path (query included); what it was sent. */
function serviceAnswering(answer: (method: string, path: string, body: unknown) => Response): {
  service: PromoteService;
  sent: ISent[];
} {
  const sent: ISent[] = [];
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/lab-base/',
    wsUrl: 'ws://localhost:8888/lab-base/',
    token: '',
    fetch: (async (request: Request) => {
      const text = request.method === 'GET' ? '' : await request.text();
      const url = new URL(request.url);
      const path = `${url.pathname.replace('/lab-base/jupyter-promote/', '')}${url.search.replace(/[?&]\d+$/, '')}`;
      const body = text ? JSON.parse(text) : undefined;
      sent.push({ method: request.method, path, body });
      return answer(request.method, path, body);
    }) as typeof fetch
  });
  return { service: new PromoteService(settings), sent };
}

const json = (value: unknown, status = 200) => new Response(JSON.stringify(value), { status });

const NEXT = [
  '2026-12-07T03:00:00+01:00',
  '2026-12-08T03:00:00+01:00',
  '2026-12-09T03:00:00+01:00',
  '2026-12-10T03:00:00+01:00',
  '2026-12-11T03:00:00+01:00'
];

function schedule(id: string, fields: Partial<ISchedule> = {}): ISchedule {
  return {
    id,
    name: 'nightly',
    notebook: '/home/me/train.ipynb',
    request: { notebook: 'train.ipynb', target: 'local' },
    cron: '0 3 * * *',
    timezone: 'Europe/Berlin',
    paused: false,
    missed: 'latest',
    overlap: 'skip',
    freeze: 'once',
    created_at: 1_780_000_000,
    next_due: 1_780_030_000,
    next_due_at: NEXT[0],
    last_fired: 1_780_000_000,
    last_fired_at: null,
    queued: null,
    skipped: 0,
    last_job: null,
    note: '',
    next: NEXT,
    ...fields
  };
}

function run(id: string, state: IJobRecord['state'], verdict: string | null): IJobRecord {
  return {
    ...emptyRecord(id),
    notebook: '/home/me/train.ipynb',
    target: 'local',
    state,
    created_at: 1_780_030_000,
    parity: verdict ? { verdict } : null,
    schedule: 'a1b2c3d4e5f6'
  };
}

describe('the dialog on a schedule', () => {
  it('sends the job request the form builds, with the schedule fields as ScheduleRequest names them', () => {
    // Given a form for 2 CPUs on slurm, and a schedule at 03:00 in Berlin that freezes at each run
    const form = { ...emptyForm('slurm'), resources: { cpus: '2', memory: '', gpus: '', time: '' } };
    const typed: IScheduleForm = {
      mode: 'schedule',
      cron: ' 0  3 * * * ',
      timezone: 'Europe/Berlin',
      name: ' nightly ',
      missed: 'all',
      overlap: 'queue',
      refreeze: true
    };
    // When it becomes the POST schedules body
    const request = toRequest('train.ipynb', form, []);
    // Then it is the job request, whole, and the schedule's fields
    expect(toScheduleRequest(request, typed)).toEqual({
      name: 'nightly',
      cron: '0 3 * * *',
      timezone: 'Europe/Berlin',
      missed: 'all',
      overlap: 'queue',
      freeze: 'each_run',
      request: { notebook: 'train.ipynb', target: 'slurm', resources: { cpus: 2 } }
    });
    // no name: the server's default; not re-frozen: once
    expect(toScheduleRequest(request, { ...emptySchedule('UTC'), mode: 'schedule', cron: '*/5 * * * *' })).toEqual({
      cron: '*/5 * * * *',
      timezone: 'UTC',
      missed: 'latest',
      overlap: 'skip',
      freeze: 'once',
      request
    });
  });

  it('refuses an empty cron expression beside its field, and places the server errors on theirs', () => {
    const request = toRequest('train.ipynb', emptyForm('local'), []);
    expect(() => toScheduleRequest(request, { ...emptySchedule('UTC'), mode: 'schedule' })).toThrow(
      expect.objectContaining({ field: 'schedule.cron' })
    );
    expect(scheduleFieldOf('cron')).toBe('schedule.cron');
    expect(scheduleFieldOf('timezone')).toBe('schedule.timezone');
    expect(scheduleFieldOf('name')).toBe('schedule.name');
    expect(scheduleFieldOf('request.resources.cpus')).toBe('resources.cpus');
    expect(scheduleFieldOf('resources.cpus')).toBe('resources.cpus');
    expect(scheduleFieldOf('request')).toBe('');
  });

  it('starts on "Run now" in the browser time zone, the schedule fields hidden', () => {
    const settings = ServerConnection.makeSettings({ baseUrl: 'http://localhost:8888/' });
    const html = renderToStaticMarkup(
      <PromoteForm
        service={new PromoteService(settings)}
        notebook="train.ipynb"
        initial={{ form: emptyForm('local'), preview: null, ownKernel: null, schedule: emptySchedule() }}
        errors={{}}
        sections={[]}
        onChange={() => undefined}
      />
    );
    expect(html).toContain('aria-label="Run now" checked="" value="now"');
    expect(html).toContain('aria-label="On a schedule"');
    expect(html).not.toContain('aria-label="Cron expression"');
    expect(emptySchedule().timezone).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone);
  });

  it('shows the next five due times, or the server refusal in one line', () => {
    const typed = { ...emptySchedule('Europe/Berlin'), mode: 'schedule' as const, cron: '0 3 * * *' };
    const fields = (due: { next: string[]; problem: string | null }, errors = {}) =>
      renderToStaticMarkup(
        <ScheduleFields schedule={typed} onChange={() => undefined} errors={errors} due={{ ...due, loading: false }} />
      );
    const shown = fields({ next: NEXT, problem: null });
    for (const label of ['Cron expression', 'Time zone', 'Schedule name', 'Missed runs', 'Overlap']) {
      expect(shown).toContain(`aria-label="${label}"`);
    }
    expect(shown).toContain('aria-label="Re-freeze at each run"');
    expect(shown.match(/<li title="[^"]+">[^<]+<\/li>/g)).toEqual(
      NEXT.map(t => `<li title="${t}">${t.slice(0, 10)} 03:00 +01:00</li>`)
    );
    const refused = fields({ next: [], problem: "cron '61 * * * *': not a cron expression" });
    expect(refused).toContain(
      '<div class="jp-Promote-fieldError" role="alert" data-field="schedule.preview">cron &#x27;61 * * * *&#x27;: not a cron expression</div>'
    );
    expect(refused).not.toContain('<ol');
    // the server's answer to Create shows beside its field
    expect(fields({ next: [], problem: null }, { 'schedule.timezone': 'timezone x: unknown' })).toMatch(
      /aria-label="Time zone"[^>]*\/><\/label><div class="jp-Promote-fieldError" role="alert" data-field="schedule.timezone">timezone x: unknown/
    );
    expect(dueText('2026-06-01T12:00:00Z')).toBe('2026-06-01 12:00 UTC');
  });

  it('asks the server for the preview and the creation, and reads its 400 as the one-line message', async () => {
    const { service, sent } = serviceAnswering((method, path, body) => {
      const cron = (body as { cron?: string } | undefined)?.cron;
      if (cron === 'nope') {
        return json({ message: "cron 'nope': not a cron expression", subject: 'nope', field: 'cron' }, 400);
      }
      return path === 'schedules/preview' ? json({ next: NEXT }) : json(schedule('a1b2c3d4e5f6'), 201);
    });
    expect(await service.previewSchedule('0 3 * * *', 'Europe/Berlin')).toEqual(NEXT);
    const refusal = await service.previewSchedule('nope', 'UTC').catch(e => e);
    expect(refusal).toBeInstanceOf(PromoteRequestError);
    expect([refusal.message, refusal.status, refusal.field]).toEqual([
      "cron 'nope': not a cron expression",
      400,
      'cron'
    ]);
    const body = toScheduleRequest(
      { notebook: 'train.ipynb', target: 'local' },
      {
        ...emptySchedule('UTC'),
        mode: 'schedule',
        cron: '0 3 * * *'
      }
    );
    expect((await service.createSchedule(body)).next).toHaveLength(5);
    expect(sent).toEqual([
      { method: 'POST', path: 'schedules/preview', body: { cron: '0 3 * * *', timezone: 'Europe/Berlin' } },
      { method: 'POST', path: 'schedules/preview', body: { cron: 'nope', timezone: 'UTC' } },
      { method: 'POST', path: 'schedules', body }
    ]);
  });
});

describe('the sidebar schedules', () => {
  const ID = 'a1b2c3d4e5f6';

  /** A server with one schedule and its two runs, answering each action as the REST API does. */
  function server() {
    let current = schedule(ID, { note: 'skipped 03:00: the previous run was still going' });
    return serviceAnswering((method, path, body) => {
      if (method === 'GET' && path === 'schedules') {
        return json({ schedules: [current] });
      }
      if (method === 'GET' && path === `jobs?schedule=${ID}&limit=20`) {
        return json({ jobs: [run('j2', 'running', null), run('j1', 'succeeded', 'pass')], total: 2 });
      }
      if (method === 'PATCH' && path === `schedules/${ID}`) {
        const paused = (body as { paused: boolean }).paused;
        current = { ...current, paused, next: paused ? [] : NEXT };
        return json(current);
      }
      if (method === 'POST' && path === `schedules/${ID}/run`) {
        return json({ id: 'j3' }, 202);
      }
      if (method === 'DELETE' && path === `schedules/${ID}`) {
        return json({ id: ID, deleted: true });
      }
      return json({ message: `no route ${method} ${path}` }, 404);
    });
  }

  const render = (model: SchedulesModel, onOpenJob = (_: string) => undefined) =>
    renderToStaticMarkup(<ScheduleList model={model} onOpenJob={onOpenJob} confirm={async () => true} />);

  it('lists a schedule with its cron, time zone, next due time and note, and its runs once expanded', async () => {
    const { service, sent } = server();
    const model = new SchedulesModel(service);
    await model.refresh();
    const collapsed = render(model);
    expect(collapsed).toContain('data-schedule="a1b2c3d4e5f6" data-paused="false"');
    expect(collapsed).toContain('<span class="jp-Promote-jobName">nightly</span>');
    expect(collapsed).toContain('<code>0 3 * * *</code> <span class="jp-Promote-muted">Europe/Berlin</span>');
    expect(collapsed).toContain('next 2026-12-07 03:00 +01:00');
    expect(collapsed).toContain('skipped 03:00: the previous run was still going');
    expect(collapsed).not.toContain('data-job=');
    // When it is expanded
    await model.toggle(ID);
    const expanded = render(model);
    // Then its runs are listed newest first with their state and verdict, each a button to the job
    expect(expanded.match(/data-job="(\w+)" data-state="(\w+)"/g)).toEqual([
      'data-job="j2" data-state="running"',
      'data-job="j1" data-state="succeeded"'
    ]);
    expect(expanded).toContain('parity: pass');
    expect(sent.map(s => `${s.method} ${s.path}`)).toEqual(['GET schedules', `GET jobs?schedule=${ID}&limit=20`]);
    // and a refresh reads the expanded schedule's runs again
    await model.refresh();
    expect(sent.slice(2).map(s => s.path)).toEqual(['schedules', `jobs?schedule=${ID}&limit=20`]);
    model.dispose();
  });

  it('pauses, resumes, runs now and deletes through their routes', async () => {
    const { service, sent } = server();
    const model = new SchedulesModel(service);
    await model.refresh();
    await model.pause(ID);
    expect(model.schedules?.[0].paused).toBe(true);
    expect(render(model)).toContain('no next run');
    expect(render(model)).toContain('>Resume</button>');
    await model.resume(ID);
    expect(render(model)).toContain('>Pause</button>');
    expect(await model.runNow(ID)).toBe('j3');
    expect(model.isExpanded(ID)).toBe(true);
    await model.remove(ID);
    expect(model.schedules).toEqual([]);
    expect(render(model)).toContain('No schedules yet.');
    expect(sent.slice(1).map(s => [s.method, s.path, s.body])).toEqual([
      ['PATCH', `schedules/${ID}`, { paused: true }],
      ['PATCH', `schedules/${ID}`, { paused: false }],
      ['POST', `schedules/${ID}/run`, {}],
      ['GET', `jobs?schedule=${ID}&limit=20`, undefined],
      ['DELETE', `schedules/${ID}`, undefined]
    ]);
    expect(model.problem).toBeNull();
    model.dispose();
  });

  it('says a refused action in one line', async () => {
    const { service } = server();
    const model = new SchedulesModel(service);
    await model.refresh();
    await model.pause('ffffffffffff');
    expect(model.problem).toBe('no route PATCH schedules/ffffffffffff');
    expect(render(model)).toContain('role="alert">no route PATCH schedules/ffffffffffff</div>');
    model.dispose();
  });
});
