import { FieldError, emptyForm, fieldOfSubject, parseSweep, toRequest } from '../form';
import {
  IJobEvent,
  IJobRecord,
  MAX_POINTS,
  foldEvent,
  foldEvents,
  groupJobs,
  hasGap,
  parseParameter,
  viewOf,
  withRecord
} from '../model';
import { IParameter } from '../tokens';

function record(fields: Partial<IJobRecord> = {}): IJobRecord {
  return {
    id: 'abc123',
    notebook: '/home/me/train.ipynb',
    target: 'local',
    kernel: 'python3',
    state: 'pending',
    reason: null,
    message: null,
    parameters: {},
    resources: {},
    monitor: {},
    metrics: {},
    image: null,
    lock_hash: null,
    created_at: 100,
    started_at: null,
    finished_at: null,
    updated_at: 100,
    sweep: null,
    parity: null,
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
    event('status', { state: 'pending', message: "freezing the kernel's environment" }, 100),
    event('status', { state: 'pending', message: 'building or finding the environment image' }, 102),
    event('status', { state: 'pending', message: 'pushing the environment image' }, 108),
    event('image', { ref: 'jupyter-promote/env:abc', built: true, digest: null }, 110),
    event('status', { state: 'queued', target: 'docker' }, 111),
    event('status', { state: 'running' }, 113),
    event('cell', { phase: 'start', number: 1, total: 3, own_total: 2, injected: true }, 114),
    event('cell', { phase: 'end', ok: true, number: 1, total: 3, own_total: 2, injected: true }, 114),
    event('cell', { phase: 'start', number: 2, total: 3, own_number: 1, own_total: 2, injected: false }, 114),
    event('cell', { phase: 'end', ok: true, number: 2, total: 3, own_number: 1, own_total: 2, injected: false }, 115),
    event('step', { steps: 50, steps_per_s: 25.5 }, 116),
    event('metric', { metrics: { loss: 0.5, name: 'x' } }, 117),
    event('gpu', { devices: [{ index: 0, memory_used: 2 ** 30 }] }, 118),
    event('alert', { kind: 'nan', message: 'loss is NaN at step 60', action: 'fail' }, 119),
    event('status', { state: 'failed', reason: 'nan', message: 'loss is NaN' }, 120)
  ];
}

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
    form.maxParallel = '1';
    const request = toRequest('t.ipynb', form, PARAMETERS);
    expect([request.sweep, request.max_parallel]).toEqual([{ lr: [0.1, 0.2] }, 1]);
  });

  it('maps a server error to the field it names', () => {
    expect(fieldOfSubject('resources', "resources.memory 'x': not a size")).toBe('resources.memory');
    expect(fieldOfSubject('target', "target 'k8s': no such target")).toBe('target');
    expect(fieldOfSubject('notebook', 'x')).toBeNull();
    expect(fieldOfSubject(null, 'x')).toBeNull();
  });
});
