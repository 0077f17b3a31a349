/**
 * How the sidebar words a job: its duration, the jobs in display order, and what an alert means.
 * Pure, no JupyterLab import.
 */

import { IJobView } from './job/view';

/** Seconds from the job's start to its end (or to `now` while it runs); null before it starts. */
export function duration(view: IJobView, now: number): number | null {
  const start = view.startedAt ?? view.record.started_at;
  if (start === null || start === undefined) {
    return null;
  }
  const end = view.finishedAt ?? view.record.finished_at ?? now;
  return Math.max(0, end - start);
}

/** "42 s", "3 min 5 s", "1 h 2 min". */
export function formatDuration(seconds: number | null): string {
  if (seconds === null) {
    return '';
  }
  const s = Math.round(seconds);
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ${s % 60} s`;
  }
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The jobs in display order: newest first, the tasks of one sweep together (by index) under their sweep. */
export interface IJobGroup {
  /** The sweep id, or null for a single job. */
  sweep: string | null;
  jobs: IJobView[];
}

export function groupJobs(views: IJobView[]): IJobGroup[] {
  const newest = [...views].sort((a, b) => b.record.created_at - a.record.created_at);
  const groups: IJobGroup[] = [];
  const bySweep = new Map<string, IJobGroup>();
  for (const view of newest) {
    const sweep = view.record.sweep?.id ?? null;
    if (sweep === null) {
      groups.push({ sweep: null, jobs: [view] });
      continue;
    }
    let group = bySweep.get(sweep);
    if (!group) {
      group = { sweep, jobs: [] };
      bySweep.set(sweep, group);
      groups.push(group);
    }
    group.jobs.push(view);
  }
  for (const group of bySweep.values()) {
    group.jobs.sort((a, b) => (a.record.sweep?.index ?? 0) - (b.record.sweep?.index ?? 0));
  }
  return groups;
}

/** What an alert means and where to look first, by its kind. */
export const ALERT_EXPLANATIONS: Record<string, string> = {
  nan: 'A loss or gradient became NaN or Inf. Usual causes: a learning rate too high, a bad batch, fp16 overflow, or a different library version than the notebook used.',
  stall:
    'No optimizer step and no cell progress for the stall timeout: a deadlock, a hung data loader or collective, or a wait on I/O. The Python stacks were saved in the run directory.',
  throughput_drop:
    "Steps per second fell well below this run's own baseline: contention from neighbours, thermal throttling, swapping, or a slower data path.",
  memory:
    'GPU memory is under pressure or fragmented: the next larger allocation may fail. Try a smaller batch, or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.',
  nondeterministic_op:
    'An operation has no deterministic implementation: replicas of this job may differ even with the same seed.',
  kernel_start: 'The kernel died before its first reply and was started again (an overloaded or memory-starved node).'
};

export function explainAlert(kind: string): string {
  return ALERT_EXPLANATIONS[kind] ?? 'The in-job monitor raised this alert.';
}
