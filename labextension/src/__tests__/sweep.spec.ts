import { IJobRecord } from '../api/jobs';
import { emptyRecord, viewOf } from '../job/view';
import { contentionRates, divergenceValues, formatValue, groupKind, settledCount, stateCounts } from '../sweep';

function member(id: string, state: IJobRecord['state'], kind?: 'grid' | 'replicas' | 'contention'): IJobRecord {
  return {
    ...emptyRecord(id),
    notebook: '/home/me/train.ipynb',
    target: 'local',
    kernel: 'python3',
    state,
    created_at: 1,
    updated_at: 1,
    sweep: { id: 'g1', index: 0, size: 3, kind }
  };
}

describe('a group summary', () => {
  it('orders the counts by state as a job goes through them, unknown states last', () => {
    expect(stateCounts({ failed: 1, missing: 1, succeeded: 2, running: 1, queued: 0 })).toEqual([
      ['running', 1],
      ['succeeded', 2],
      ['failed', 1],
      ['missing', 1]
    ]);
  });

  it('shows values in a few digits, strings as written', () => {
    expect(formatValue(0.123456789)).toBe('0.1235');
    expect(formatValue(42)).toBe('42');
    expect(formatValue('nan')).toBe('nan');
    expect(formatValue(null)).toBe('—');
    expect(divergenceValues({ step: 3, report: 2, metric: 'loss', values: [0.25, 0.2500001] })).toBe('0.25 ≠ 0.25');
  });

  it('knows the kind of a group and how many of its jobs have ended', () => {
    const views = [
      viewOf(member('a', 'succeeded', 'replicas')),
      viewOf(member('b', 'running', 'replicas')),
      viewOf({ ...member('c', 'failed'), sweep: { id: 'other', index: 0, size: 1 } })
    ];
    expect(groupKind(views)).toBe('replicas');
    expect(groupKind([viewOf(member('d', 'queued'))])).toBe('grid');
    expect(groupKind(views, 'contention')).toBe('contention');
    expect(settledCount(views, 'g1')).toBe(1);
  });

  it("reads a contention test's steps/s alone and under stress", () => {
    const report = {
      stress: { kind: 'cpu', level: 4 },
      isolated: { steps_per_s: 50 },
      contended: { steps_per_s: 20 }
    };
    expect(contentionRates(report)).toEqual({ isolated: 50, contended: 20, ratio: 0.4 });
    expect(contentionRates({ ...report, steps_per_s_ratio: 0.399 }).ratio).toBe(0.399);
    expect(contentionRates({ ...report, contended: { steps_per_s: null } }).ratio).toBeNull();
  });
});
