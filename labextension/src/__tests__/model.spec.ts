import { IJobEvent, IJobRecord } from '../api/jobs';
import { IParameter } from '../api/types';
import { notifyChoice } from '../form/choices';
import { FORM_FIELDS, formFieldOf } from '../form/fields';
import { emptyForm, toRequest } from '../form/form';
import { FieldError, parseContention, parseSeeds, parseSweep } from '../form/parse';
import { groupJobs } from '../format';
import { foldEvent, foldEvents, hasGap } from '../job/fold';
import { problem } from '../job/validate';
import { emptyRecord, MAX_POINTS, viewOf, withRecord } from '../job/view';
import { parseParameter } from '../parameters';

function record(fields: Partial<IJobRecord> = {}): IJobRecord {
  return {
    ...emptyRecord('abc123'),
    notebook: '/home/me/train.ipynb',
    target: 'local',
    kernel: 'python3',
    created_at: 100,
    updated_at: 100,
    ...fields
  };
}

let seq = 0;
function event(type: string, fields: Record<string, unknown> = {}, ts?: number): IJobEvent {
  seq += 1;
  return { seq, ts: ts ?? 100 + seq, job: 'abc123', type, ...fields };
}

beforeEach(() => {
  seq = 0;
});

/** The events of a real local run, in the order the pipeline, runner and monitor write them. */
function aRun(): IJobEvent[] {
  return [
    event('status', { state: 'pending', stage: 'freezing', message: "freezing the kernel's environment" }, 100),
    event('status', { state: 'pending', stage: 'building', message: 'building or finding the environment image' }, 102),
    event('status', { state: 'pending', stage: 'pushing', message: 'pushing the environment image' }, 108),
    event('image', { ref: 'jupyter-promote/env:abc', built: true, digest: null }, 110),
    event('status', { state: 'queued', stage: 'queued', target: 'docker' }, 111),
    event('status', { state: 'running', stage: 'running' }, 113),
    event('cell', { phase: 'start', number: 1, total: 3, own_total: 2, injected: true }, 114),
    event('cell', { phase: 'end', ok: true, number: 1, total: 3, own_total: 2, injected: true }, 114),
    event('cell', { phase: 'start', number: 2, total: 3, own_number: 1, own_total: 2, injected: false }, 114),
    event('cell', { phase: 'end', ok: true, number: 2, total: 3, own_number: 1, own_total: 2, injected: false }, 115),
    event('step', { steps: 50, steps_per_s: 25.5 }, 116),
    event('metric', { metrics: { loss: 0.5, name: 'x' } }, 117),
    event('gpu', { devices: [{ index: 0, memory_used: 2 ** 30 }] }, 118),
    event('alert', { kind: 'nan', message: 'loss is NaN at step 60', action: 'fail' }, 119),
    event('status', { state: 'failed', reason: 'nan', message: 'loss is NaN', stage: 'finished' }, 120)
  ];
}

describe('a job record', () => {
  it('declares deterministic, as JobRecord (models.py) keeps it for a rerun', () => {
    // Given a record the server sent for a deterministic job, and a record nothing is known of yet
    const sent: IJobRecord = record({ deterministic: true });
    // When their flags are read as the type declares them (a boolean, not unknown)
    const flags: boolean[] = [sent.deterministic, emptyRecord('new').deterministic];
    // Then the sent one is deterministic, the empty one is not, and a view keeps the record's flag
    expect(flags).toEqual([true, false]);
    expect(viewOf(sent).record.deterministic).toBe(true);
  });
});

describe('folding events into a job view', () => {
  it('follows state, stages, progress, metrics and alerts', () => {
    const view = foldEvents(viewOf(record()), aRun());
    expect(view.state).toBe('failed');
    expect(view.reason).toBe('nan');
    expect(view.seq).toBe(15);
    expect(view.stages.map(s => [s.name, s.start, s.end])).toEqual([
      ['freezing', 100, 102],
      ['building', 102, 108],
      ['pushing', 108, 111],
      ['queued', 111, 113],
      ['running', 113, 120],
      ['finished', 120, 120]
    ]);
    expect(view.stage).toBe('finished');
    expect(view.startedAt).toBe(113);
    expect(view.finishedAt).toBe(120);
    expect([view.cellsDone, view.cellsTotal, view.cellNumber]).toEqual([1, 2, 1]); // the notebook's own cells
    expect([view.steps, view.stepsPerS]).toEqual([50, 25.5]);
    expect(view.metrics).toEqual({ loss: 0.5, name: 'x' });
    expect(view.series.metrics).toEqual({ loss: [{ t: 117, v: 0.5 }] }); // only numbers are charted
    expect(view.series.stepsPerS).toEqual([{ t: 116, v: 25.5 }]);
    expect(view.series.gpuMemory).toEqual({ 'GPU 0': [{ t: 118, v: 2 ** 30 }] });
    expect(view.alerts.map(a => a.kind)).toEqual(['nan']);
    expect(view.record.image?.ref).toBe('jupyter-promote/env:abc');
  });

  it('never reads a stage from prose: without `stage`, pending events start none', () => {
    const legacy = aRun().map(e => {
      const { stage, ...rest } = e;
      return stage === undefined ? e : (rest as IJobEvent);
    });
    const view = foldEvents(viewOf(record()), legacy);
    expect(view.stages.map(s => s.name)).toEqual(['queued', 'running', 'finished']);
    const submitting = foldEvent(viewOf(record()), event('status', { state: 'pending', stage: 'pushing' }, 5));
    expect([submitting.stage, submitting.stages]).toEqual(['pushing', [{ name: 'pushing', start: 5, end: null }]]);
    const unknown = foldEvent(submitting, event('status', { state: 'pending', stage: 'warming up' }, 6));
    expect(unknown.stages).toBe(submitting.stages);
  });

  it('ignores events that cannot be folded, without moving seq', () => {
    const base = viewOf(record());
    const bad: unknown[] = [
      { seq: 1, job: 'abc123', type: 'status', state: 'running' },
      { seq: 1, ts: 1, job: 'abc123', type: 'progress' },
      { seq: true, ts: 1, job: 'abc123', type: 'heartbeat', steps: 5 },
      { seq: 0, ts: 1, job: 'abc123', type: 'heartbeat', steps: 5 },
      { seq: 1, ts: 1, job: 'abc123', type: 'status', state: 'building' },
      { seq: 1, ts: 1, job: 7, type: 'status', state: 'running' },
      { seq: 1, ts: 1, job: 'abc123', type: 'metric', metrics: [1] },
      { seq: 1, ts: 1, job: 'abc123', type: 'alert', kind: null },
      { seq: 1, ts: 1, job: 'abc123', type: 'artifacts', files: [{ path: 'a', size: 1.5 }] },
      { seq: 1, ts: 1, job: 'abc123', type: 'artifacts', files: [{ path: 'a', size: true }] }
    ];
    for (const e of bad) {
      expect(problem(e)).not.toBeNull();
      expect(foldEvent(base, e as IJobEvent)).toBe(base);
    }
    expect(problem({ seq: 1, ts: 1, type: 'heartbeat', steps: 5 })).toBeNull(); // no job: fine
    const files = [{ path: 'model.pt', size: 10 }];
    const view = foldEvent(base, { seq: 1, ts: 1, job: 'abc123', type: 'artifacts', files });
    expect([view.seq, view.artifacts, view.record.artifacts]).toEqual([1, files, files]);
  });

  it('sets aside an event whose field it cannot use, naming the field, as the server does', () => {
    const base = foldEvent(viewOf(record()), event('status', { state: 'running' }, 1));
    const bad: [Record<string, unknown>, string][] = [
      [{ type: 'heartbeat', steps: '5' }, 'steps'],
      [{ type: 'heartbeat', steps: Infinity }, 'steps'],
      [{ type: 'step', steps: 5.5 }, 'steps'],
      [{ type: 'step', steps: 5, steps_per_s: 'fast' }, 'steps_per_s'],
      [{ type: 'status', state: 'failed', ts: 'yesterday' }, 'ts'],
      [{ type: 'status', state: 'failed', ts: NaN }, 'ts'],
      [{ type: 'status', state: 'failed', message: 7 }, 'message'],
      [{ type: 'cell', phase: 'start', number: '3', total: 4 }, 'number'],
      [{ type: 'cell', phase: 'start', number: 1, total: -4 }, 'total'],
      [{ type: 'metric', metrics: { loss: [1] } }, 'metrics'],
      [{ type: 'alert', kind: 'nan', message: 5 }, 'message'],
      [{ type: 'image', ref: 'img:1', built: 'yes' }, 'built'],
      [{ type: 'gpu', devices: { index: 0 } }, 'devices']
    ];
    for (const [fields, named] of bad) {
      const e = { seq: 2, ts: 2, job: 'abc123', ...fields };
      expect(problem(e)).toContain(named);
      expect(foldEvent(base, e as IJobEvent)).toBe(base);
    }
  });

  it('ignores replayed events, so a reconnect or a reload changes nothing', () => {
    const events = aRun();
    const once = foldEvents(viewOf(record()), events);
    const twice = foldEvents(once, events);
    expect(twice).toBe(once);
    const overlapping = foldEvents(foldEvents(viewOf(record()), events.slice(0, 9)), events.slice(4));
    expect(overlapping).toEqual(once);
  });

  it('never undoes a final state', () => {
    const base = viewOf(record());
    const done = foldEvent(base, event('status', { state: 'cancelled', reason: 'cancelled' }));
    const late = foldEvent(done, event('status', { state: 'running' }));
    expect(late.state).toBe('cancelled');
    expect(late.seq).toBe(2);
  });

  it('does not mutate the view it folds into', () => {
    const base = viewOf(record());
    const frozen = JSON.stringify(base);
    foldEvents(base, aRun());
    expect(JSON.stringify(base)).toBe(frozen);
  });

  it('keeps at most MAX_POINTS points per series', () => {
    let view = viewOf(record());
    for (let i = 0; i < MAX_POINTS + 10; i++) {
      view = foldEvent(view, event('step', { steps: i, steps_per_s: i }));
    }
    expect(view.series.stepsPerS.length).toBe(MAX_POINTS);
    expect(view.series.stepsPerS[0].v).toBe(10);
  });

  it('detects a gap between what it has and a bus message', () => {
    const view = foldEvents(viewOf(record()), aRun().slice(0, 3));
    expect(hasGap(view, 4)).toBe(false);
    expect(hasGap(view, 6)).toBe(true);
    expect(hasGap(view, 2)).toBe(false);
  });

  it('takes a newer record without losing what the events said', () => {
    const view = foldEvents(viewOf(record()), aRun());
    const stale = withRecord(view, record({ state: 'running', metrics: { acc: 1 } }));
    expect(stale.state).toBe('failed');
    expect(stale.metrics).toEqual({ loss: 0.5, name: 'x', acc: 1 });
    const fresh = withRecord(viewOf(record()), record({ state: 'succeeded', started_at: 5 }));
    expect([fresh.state, fresh.startedAt]).toEqual(['succeeded', 5]);
  });
});

describe('the job list', () => {
  it('puts the newest first and the tasks of a sweep together, in index order', () => {
    const views = [
      viewOf(record({ id: 'a', created_at: 1 })),
      viewOf(record({ id: 's1', created_at: 5, sweep: { id: 'sw', index: 1, size: 2 } })),
      viewOf(record({ id: 's0', created_at: 4, sweep: { id: 'sw', index: 0, size: 2 } })),
      viewOf(record({ id: 'b', created_at: 3 }))
    ];
    const groups = groupJobs(views);
    expect(groups.map(g => [g.sweep, g.jobs.map(j => j.id)])).toEqual([
      ['sw', ['s0', 's1']],
      [null, ['b']],
      [null, ['a']]
    ]);
  });
});

const PARAMETERS: IParameter[] = [
  { name: 'lr', type: 'float', default: '0.1', value: 0.1, literal: true, help: '' },
  { name: 'steps', type: 'int', default: '100', value: 100, literal: true, help: '' },
  { name: 'name', type: 'str', default: "'adam'", value: 'adam', literal: true, help: '' },
  { name: 'flag', type: 'bool', default: 'False', value: false, literal: true, help: '' }
];

describe('the Promote form', () => {
  it('types parameters as their defaults are, as papermill does', () => {
    expect(parseParameter('float', '0.5')).toBe(0.5);
    expect(parseParameter('int', '3')).toBe(3);
    expect(() => parseParameter('int', '3.5')).toThrow('not a whole number');
    expect(() => parseParameter('float', 'abc')).toThrow('not a number');
    expect(parseParameter('bool', 'True')).toBe(true);
    expect(parseParameter('str', " x' ")).toBe(" x' ");
    expect(parseParameter('list', '[1, 2]')).toEqual([1, 2]);
  });

  it('sends only changed parameters, given resources and the monitor settings', () => {
    const form = emptyForm('slurm');
    form.parameters = { lr: '0.01', steps: '100.0', name: 'sgd', flag: 'False' };
    form.resources = { cpus: '2', memory: '4G', gpus: '', time: '1h' };
    form.monitor = { stall_timeout_s: '30', nan_action: 'alert' };
    expect(toRequest('t.ipynb', emptyForm('local'), PARAMETERS)).toEqual({ notebook: 't.ipynb', target: 'local' });
    expect(toRequest('nb/train.ipynb', form, PARAMETERS)).toEqual({
      notebook: 'nb/train.ipynb',
      target: 'slurm',
      parameters: { lr: 0.01, name: 'sgd' },
      resources: { cpus: 2, memory: '4G', time: '1h' },
      monitor: { nan_action: 'alert', stall_timeout_s: 30 }
    });
  });

  it('sends the notification destinations ticked, [] for nobody, nothing when none are offered', () => {
    const offered = {
      destinations: [
        { name: 'team', kind: 'slack', on: ['failed'] },
        { name: 'hook', kind: 'webhook', on: ['succeeded', 'failed'] }
      ],
      defaults: ['hook', 'gone']
    };
    // the dialog opens with the server's defaults ticked (only those it offers)
    const form = emptyForm('local');
    expect(form.notify).toBeNull();
    form.notify = notifyChoice(form.notify, offered);
    expect(form.notify).toEqual(['hook']);
    expect(toRequest('t.ipynb', form, PARAMETERS)).toEqual({ notebook: 't.ipynb', target: 'local', notify: ['hook'] });
    // everything unticked is "notify nobody", sent as such
    form.notify = [];
    expect(toRequest('t.ipynb', form, PARAMETERS).notify).toEqual([]);
    // reopened after an error: what was ticked stays ticked
    expect(notifyChoice(['team'], offered)).toEqual(['team']);
    expect(notifyChoice([], offered)).toEqual([]);
    // no destinations configured: no choice, and no `notify` (the server's defaults apply)
    expect(notifyChoice(null, { destinations: [], defaults: ['hook'] })).toBeNull();
    expect('notify' in toRequest('t.ipynb', emptyForm('local'), PARAMETERS)).toBe(false);
    expect(FORM_FIELDS).toContain(formFieldOf('notify'));
  });

  it('names the field of a value it cannot send', () => {
    const form = emptyForm('local');
    form.parameters = { steps: 'many' };
    expect(() => toRequest('t.ipynb', form, PARAMETERS)).toThrow(FieldError);
    try {
      toRequest('t.ipynb', form, PARAMETERS);
    } catch (e) {
      expect((e as FieldError).field).toBe('parameters.steps');
    }
    const cpus = emptyForm('local');
    cpus.resources.cpus = '0';
    expect(() => toRequest('t.ipynb', cpus, PARAMETERS)).toThrow('at least 1');
  });

  it('reads a sweep grid, typed per parameter, and refuses unknown names', () => {
    expect(parseSweep('lr = 0.1, 0.01\nsteps=10;', PARAMETERS)).toEqual({ lr: [0.1, 0.01], steps: [10] });
    expect(() => parseSweep('momentum = 0.9', PARAMETERS)).toThrow('not a parameter of this notebook');
    expect(() => parseSweep('steps = 1.5', PARAMETERS)).toThrow('not a whole number');
    const form = emptyForm('local');
    form.sweep = 'lr = 0.1, 0.2';
    form.max_parallel = '1';
    const request = toRequest('t.ipynb', form, PARAMETERS);
    expect([request.sweep, request.max_parallel]).toEqual([{ lr: [0.1, 0.2] }, 1]);
  });

  it('maps a server error to the form field of its `field`, never reading its message', () => {
    expect(formFieldOf('resources.cpus')).toBe('resources.cpus');
    expect(formFieldOf('resources')).toBe('resources');
    expect(formFieldOf('resources.nodes')).toBe('resources');
    expect(formFieldOf('monitor.nan_action')).toBe('monitor.nan_action');
    expect(formFieldOf('monitor.check_every')).toBe('monitor');
    expect(formFieldOf('target')).toBe('target');
    expect(formFieldOf('kernel')).toBe('kernel');
    expect(formFieldOf('gpus')).toBe('resources.gpus'); // the freeze preview's
    for (const field of ['replicas', 'seeds', 'contention', 'sweep', 'max_parallel', 'deterministic']) {
      expect(formFieldOf(field)).toBe(field);
    }
    expect(formFieldOf('parameters.lr', ['lr', 'steps'])).toBe('parameters.lr');
    expect(formFieldOf('parameters.momentum', ['lr', 'steps'])).toBe('parameters');
    expect(formFieldOf('parameters.lr')).toBe('parameters'); // no parameter fields shown
    expect(formFieldOf('parameters')).toBe('parameters');
    expect(formFieldOf('notebook')).toBe('');
    expect(formFieldOf('body')).toBe('');
    expect(formFieldOf(null)).toBe('');
    expect(formFieldOf(undefined)).toBe('');
    expect(formFieldOf('something.new')).toBe('');
    expect(FORM_FIELDS).toContain(formFieldOf('monitor.stall_timeout_s'));
  });

  it('sends replicas, seeds and a contention test', () => {
    const form = emptyForm('local');
    form.replicas = ' 3 ';
    form.seeds = '0, 1,2,';
    expect(toRequest('t.ipynb', form, PARAMETERS)).toEqual({
      notebook: 't.ipynb',
      target: 'local',
      replicas: 3,
      seeds: [0, 1, 2]
    });
    const stress = emptyForm('local');
    stress.contention = { kind: 'memory', amount: '1G' };
    expect(toRequest('t.ipynb', stress, PARAMETERS).contention).toBe('memory:1G');
    expect(parseContention('cpu', '4')).toBe('cpu:4');
    expect(parseContention('cpu', '')).toBe('cpu');
    expect(parseContention('memory', ' 512 MiB ')).toBe('memory:512MiB');
    expect(parseContention('memory', '')).toBe('memory');
    expect(parseContention('gpu', '')).toBe('gpu');
    expect(parseContention('gpu', '2')).toBe('gpu'); // no amount for gpu: its field is disabled
    expect(parseContention('', '4')).toBeUndefined();
    expect(parseSeeds('')).toEqual([]);
    expect(parseSeeds(' 7 ')).toEqual([7]);
  });

  it('refuses bad replicas, seeds and contention amounts, naming their field', () => {
    const fieldOf = (change: (form: ReturnType<typeof emptyForm>) => void): string | null => {
      const form = emptyForm('local');
      change(form);
      try {
        toRequest('t.ipynb', form, PARAMETERS);
        return null;
      } catch (e) {
        expect(e).toBeInstanceOf(FieldError);
        return (e as FieldError).field;
      }
    };
    expect(fieldOf(f => (f.replicas = '0'))).toBe('replicas');
    expect(fieldOf(f => (f.replicas = '2.5'))).toBe('replicas');
    expect(fieldOf(f => (f.replicas = 'two'))).toBe('replicas');
    expect(fieldOf(f => (f.seeds = '1, x'))).toBe('seeds');
    expect(fieldOf(f => (f.seeds = '1.5'))).toBe('seeds');
    expect(fieldOf(f => (f.seeds = '-1'))).toBe('seeds');
    expect(fieldOf(f => (f.seeds = '1 2'))).toBe('seeds');
    expect(fieldOf(f => (f.contention = { kind: 'cpu', amount: '0' }))).toBe('contention');
    expect(fieldOf(f => (f.contention = { kind: 'cpu', amount: 'many' }))).toBe('contention');
    expect(fieldOf(f => (f.contention = { kind: 'memory', amount: 'lots' }))).toBe('contention');
    // replicas and seeds are a group of their own: not with a sweep, not with a contention test
    expect(
      fieldOf(f => {
        f.replicas = '2';
        f.sweep = 'lr = 0.1, 0.2';
      })
    ).toBe('replicas');
    expect(
      fieldOf(f => {
        f.seeds = '0, 1';
        f.sweep = 'lr = 0.1, 0.2';
      })
    ).toBe('seeds');
    expect(
      fieldOf(f => {
        f.seeds = '0, 1';
        f.contention = { kind: 'gpu', amount: '' };
      })
    ).toBe('seeds');
    expect(
      fieldOf(f => {
        f.replicas = '2';
        f.seeds = '0, 1';
      })
    ).toBeNull();
  });
});
