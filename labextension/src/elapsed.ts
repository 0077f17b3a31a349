/**
 * The charts' x axis: time elapsed since the job started, in seconds, minutes, hours or days as the
 * span of the axis calls for ("0 s, 5 s, 10 s", "0 min, 2 min, 4 min", "1.5 h", "3 d"). Pure (no DOM,
 * no uPlot): Jest tests it, Chart.tsx hands it to uPlot with `scales.x.time = false`.
 */

import { IPoint } from './job/view';

/** A unit of elapsed time on an axis: its symbol and its length in seconds. */
export interface IElapsedUnit {
  symbol: 's' | 'min' | 'h' | 'd';
  seconds: number;
}

const SECOND: IElapsedUnit = { symbol: 's', seconds: 1 };
const MINUTE: IElapsedUnit = { symbol: 'min', seconds: 60 };
const HOUR: IElapsedUnit = { symbol: 'h', seconds: 3600 };
const DAY: IElapsedUnit = { symbol: 'd', seconds: 86400 };

/**
 * The distances between ticks uPlot may choose from (seconds): round numbers of each unit, so that
 * a tick falls on 10 s, 5 min, 6 h or 2 d rather than on 7 s or 143 s.
 */
export const ELAPSED_INCREMENTS: readonly number[] = [
  0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800,
  432000, 864000, 1728000, 4320000, 8640000, 17280000, 43200000, 86400000
];

/** The unit the ticks of an axis spanning `span` seconds are written in: one unit per axis. */
export function elapsedUnit(span: number): IElapsedUnit {
  if (!(span > 180)) {
    return SECOND; // up to 3 minutes (and an empty or single-point axis)
  }
  if (span <= 3 * 3600) {
    return MINUTE;
  }
  if (span <= 3 * 86400) {
    return HOUR;
  }
  return DAY;
}

/** A number with at most `digits` decimals, less its trailing zeros ("1.5", "2", "0.25"). */
function trimmed(value: number, digits: number): string {
  const text = value.toFixed(digits);
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

/** `seconds` written in `unit`: "5 s", "2 min", "1.5 h" (at most two decimals, "0 s" for 0). */
export function formatElapsed(seconds: number, unit: IElapsedUnit = elapsedUnit(Math.abs(seconds))): string {
  const text = trimmed(seconds / unit.seconds, 2);
  return `${text === '-0' ? '0' : text} ${unit.symbol}`;
}

/** The labels of an axis's ticks (seconds since the start), all in the unit its span calls for. */
export function elapsedTickLabels(ticks: readonly number[], span: number): string[] {
  const unit = elapsedUnit(span);
  return ticks.map(t => formatElapsed(t, unit));
}

/**
 * Where the x axis starts: the job's start (its record's `started_at`, unix seconds), or when it has
 * none yet, the first point of any series; null when there is neither.
 */
export function chartOrigin(
  startedAt: number | null | undefined,
  series: readonly (readonly IPoint[])[]
): number | null {
  if (typeof startedAt === 'number' && Number.isFinite(startedAt)) {
    return startedAt;
  }
  let first: number | null = null;
  for (const points of series) {
    for (const p of points) {
      first = first === null ? p.t : Math.min(first, p.t);
    }
  }
  return first;
}

/** The points with `t` as seconds since `origin` (unchanged when there is no origin: no points either). */
export function toElapsed(points: readonly IPoint[], origin: number | null): IPoint[] {
  return origin === null ? [...points] : points.map(p => ({ t: p.t - origin, v: p.v }));
}

/**
 * The x range to draw: from the job's start (or the first point, if one came before it) to the last
 * point, never empty (one sample or none still draws a one-second axis, not a year).
 */
export function elapsedRange(min: number | null, max: number | null): [number, number] {
  const low = min === null || !Number.isFinite(min) ? 0 : Math.min(0, min);
  const high = max === null || !Number.isFinite(max) ? low + 1 : max;
  return [low, Math.max(high, low + 1)];
}
