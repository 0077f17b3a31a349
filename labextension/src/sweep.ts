/**
 * A group of jobs (a sweep, replicas or seeds, a contention test) as its summary shows it. Pure (no
 * JupyterLab import): Jest tests it, the sidebar renders it.
 */

import { IContentionReport, IDivergence } from './api/groups';
import { GroupKind, JOB_STATES } from './api/jobs';
import { IJobView, isFinal } from './job/view';

/** A group's counts by state, in the order a job goes through them (unknown states, like missing, last). */
export function stateCounts(states: Record<string, number>): [string, number][] {
  const order = JOB_STATES as string[];
  const rank = (state: string) => (order.includes(state) ? order.indexOf(state) : order.length);
  return Object.entries(states)
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b));
}

/** A metric's value in a few significant digits; anything else (a string such as "nan") as written. */
export function formatValue(value: unknown): string {
  if (typeof value === 'number') {
    if (Number.isInteger(value)) {
      return String(value);
    }
    return Number.isFinite(value) ? String(Number(value.toPrecision(4))) : String(value);
  }
  return value === null || value === undefined ? '—' : typeof value === 'string' ? value : JSON.stringify(value);
}

/** What made the group: its kind from the summary or, before it comes, from one of its job records. */
export function groupKind(views: IJobView[], summaryKind?: GroupKind): GroupKind {
  return summaryKind ?? views.find(v => v.record.sweep?.kind)?.record.sweep?.kind ?? 'grid';
}

/** How many of the group's jobs have reached a final state (the summary is asked for again when it grows). */
export function settledCount(views: IJobView[], group: string): number {
  return views.filter(v => v.record.sweep?.id === group && isFinal(v.state)).length;
}

/** The values replicas reported where they first differ, one per replica ("0.25 ≠ 0.2500001"). */
export function divergenceValues(divergence: IDivergence): string {
  return divergence.values.map(formatValue).join(' ≠ ');
}

/** Steps per second alone and under contention, and the ratio (contended / isolated), when both are known. */
export function contentionRates(report: IContentionReport): {
  isolated: number | null;
  contended: number | null;
  ratio: number | null;
} {
  const isolated = report.isolated?.steps_per_s ?? null;
  const contended = report.contended?.steps_per_s ?? null;
  const ratio = report.steps_per_s_ratio ?? (isolated && contended !== null ? contended / isolated : null);
  return { isolated, contended, ratio };
}
