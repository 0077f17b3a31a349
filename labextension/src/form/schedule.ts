/**
 * The "Run now" / "On a schedule" choice of the Promote dialog: what a person typed for a schedule, and
 * the `POST schedules` body it becomes around the job request the rest of the form builds (the
 * generated ScheduleRequest). Pure (no JupyterLab import): Jest tests it, the dialog renders it.
 */

import { IPromoteRequest, IScheduleRequest, MissedPolicy, OverlapPolicy } from '../api/types';
import { formFieldOf } from './fields';
import { FieldError } from './parse';

/** Run the job once now (what Promote always did), or create a schedule that fires it. */
export type RunMode = 'now' | 'schedule';

/** The schedule's fields, as typed. */
export interface IScheduleForm {
  mode: RunMode;
  /** Five fields: minute hour day month weekday. */
  cron: string;
  /** An IANA time zone; the browser's own at first. */
  timezone: string;
  /** '' = the server's default (the notebook's name and the schedule's id). */
  name: string;
  missed: MissedPolicy;
  overlap: OverlapPolicy;
  /** Freeze the notebook at each run (each_run) instead of once, when the schedule is created. */
  refreeze: boolean;
}

/** The ScheduleRequest fields the dialog shows, each keyed `schedule.FIELD` among the dialog's errors. */
export const SCHEDULE_FIELDS = ['name', 'cron', 'timezone', 'missed', 'overlap', 'freeze'] as const;

/** The browser's time zone (UTC when it cannot say). */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

export function emptySchedule(timezone: string = browserTimeZone()): IScheduleForm {
  return { mode: 'now', cron: '', timezone, name: '', missed: 'latest', overlap: 'skip', refreeze: false };
}

/**
 * The `POST schedules` body firing `request` as `schedule` says; a cron expression or time zone left
 * empty raises a FieldError naming its field (the server checks what they say).
 */
export function toScheduleRequest(request: IPromoteRequest, schedule: IScheduleForm): IScheduleRequest {
  const cron = schedule.cron.trim().split(/\s+/).join(' ');
  if (!cron) {
    throw new FieldError('schedule.cron', 'cron: required (five fields: minute hour day month weekday)');
  }
  const timezone = schedule.timezone.trim();
  if (!timezone) {
    throw new FieldError('schedule.timezone', 'timezone: required (a time zone such as Europe/Berlin)');
  }
  const body: IScheduleRequest = {
    cron,
    timezone,
    missed: schedule.missed,
    overlap: schedule.overlap,
    freeze: schedule.refreeze ? 'each_run' : 'once',
    request
  };
  if (schedule.name.trim()) {
    body.name = schedule.name.trim();
  }
  return body;
}

/**
 * The dialog field that shows an error of `POST schedules`: a schedule's own field, or a field of its job
 * request (`request.resources.cpus` or, as the server checks the request, `resources.cpus`).
 */
export function scheduleFieldOf(field: string | null | undefined, parameters: readonly string[] = []): string {
  if (field && (SCHEDULE_FIELDS as readonly string[]).includes(field)) {
    return `schedule.${field}`;
  }
  if (field === 'request') {
    return '';
  }
  return formFieldOf(field?.startsWith('request.') ? field.slice('request.'.length) : field, parameters);
}

/** A due time as the server gives it (ISO 8601 with its offset) shown as "2026-12-07 03:00 +01:00". */
export function dueText(iso: string): string {
  const match = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(?::\d\d(?:\.\d+)?)?(Z|[+-]\d\d:\d\d)?$/.exec(iso);
  if (!match) {
    return iso;
  }
  const offset = match[3] === undefined ? '' : match[3] === 'Z' ? ' UTC' : ` ${match[3]}`;
  return `${match[1]} ${match[2]}${offset}`;
}
