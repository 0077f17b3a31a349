import {
  chartOrigin,
  ELAPSED_INCREMENTS,
  elapsedRange,
  elapsedTickLabels,
  elapsedUnit,
  formatElapsed,
  toElapsed
} from '../elapsed';

/** A unix time in 2025: what uPlot labelled with years when it took x for a date. */
const START = 1_750_000_000;

describe('the elapsed-time x axis', () => {
  it("measures each point from the job's start, else from the first point", () => {
    const points = [
      { t: START + 1.5, v: 20 },
      { t: START + 9, v: 25 }
    ];
    expect(toElapsed(points, chartOrigin(START, [points]))).toEqual([
      { t: 1.5, v: 20 },
      { t: 9, v: 25 }
    ]);
    // no started_at yet: the earliest point of any series is 0
    const other = [{ t: START + 0.5, v: 1 }];
    expect(chartOrigin(null, [points, other])).toBe(START + 0.5);
    expect(chartOrigin(undefined, [[], []])).toBeNull();
    expect(toElapsed(points, null)).toEqual(points);
  });

  it('labels the ticks of a 9-second job in seconds, not years', () => {
    expect(elapsedTickLabels([0, 2, 4, 6, 8], 9)).toEqual(['0 s', '2 s', '4 s', '6 s', '8 s']);
    expect(elapsedTickLabels([0, 0.5, 1], 1)).toEqual(['0 s', '0.5 s', '1 s']);
    for (const label of elapsedTickLabels([0, 5, 10], 10)) {
      expect(label).not.toMatch(/20\d\d/);
    }
  });

  it('picks minutes, hours or days as the span grows, one unit per axis', () => {
    expect(elapsedTickLabels([0, 60, 120, 180], 200)).toEqual(['0 min', '1 min', '2 min', '3 min']);
    expect(elapsedTickLabels([0, 1800, 3600, 5400], 6000)).toEqual(['0 min', '30 min', '60 min', '90 min']);
    expect(elapsedTickLabels([0, 3600, 5400, 7200], 4 * 3600)).toEqual(['0 h', '1 h', '1.5 h', '2 h']);
    expect(elapsedTickLabels([0, 86400, 172800], 5 * 86400)).toEqual(['0 d', '1 d', '2 d']);
    expect([180, 181, 3 * 3600, 3 * 3600 + 1, 3 * 86400, 3 * 86400 + 1].map(s => elapsedUnit(s).symbol)).toEqual([
      's',
      'min',
      'min',
      'h',
      'h',
      'd'
    ]);
  });

  it('writes one value in the unit that fits it, two decimals at most', () => {
    expect(formatElapsed(0)).toBe('0 s');
    expect(formatElapsed(42)).toBe('42 s');
    expect(formatElapsed(600)).toBe('10 min');
    expect(formatElapsed(5400)).toBe('90 min');
    expect(formatElapsed(18000)).toBe('5 h');
    expect(formatElapsed(100, elapsedUnit(7200))).toBe('1.67 min');
    expect(formatElapsed(-0.001)).toBe('0 s');
  });

  it('draws from the start to the last point, never an empty range', () => {
    expect(elapsedRange(1.5, 9)).toEqual([0, 9]);
    expect(elapsedRange(3, 3)).toEqual([0, 3]); // one sample: from the start to it
    expect(elapsedRange(0, 0)).toEqual([0, 1]);
    expect(elapsedRange(null, null)).toEqual([0, 1]);
    expect(elapsedRange(-2, 5)).toEqual([-2, 5]); // a point before started_at is still shown
  });

  it('offers tick distances of round seconds, minutes, hours and days, ascending', () => {
    for (const round of [1, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400]) {
      expect(ELAPSED_INCREMENTS).toContain(round);
    }
    expect([...ELAPSED_INCREMENTS].sort((a, b) => a - b)).toEqual(ELAPSED_INCREMENTS);
  });
});
