/**
 * Which events a fold can take: `problem()` says why one cannot, field for field the same rule as
 * `problem()` of jupyter_promote/events/fold.py. Pure, no JupyterLab import.
 */

import { JOB_STATES } from '../api/jobs';

/** The event types the server writes (`EVENT_TYPES` of jupyter_promote/runtime/events.py). */
export const EVENT_TYPES: ReadonlySet<string> = new Set([
  'status',
  'image',
  'cell',
  'heartbeat',
  'step',
  'metric',
  'gpu',
  'alert',
  'artifacts',
  'attempt'
]);

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A finite number (JSON's `true` is no number; 1e999 parses to Infinity, which is none either). */
function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** A whole number, not a boolean (JSON's `true` is no seq, no size). */
function isInteger(value: unknown): value is number {
  return isNumber(value) && Number.isInteger(value);
}

type Check = (value: unknown) => boolean;

const isCount: Check = value => isInteger(value) && value >= 0;
const isText: Check = value => typeof value === 'string';

/** A field that may also be missing or null. */
function optional(check: Check): Check {
  return value => value === undefined || value === null || check(value);
}

/** What `promote.report` writes: names to finite numbers, booleans or text (NaN as "nan"). */
const isMetrics: Check = value =>
  isObject(value) &&
  Object.values(value).every(v => v === null || isNumber(v) || typeof v === 'string' || typeof v === 'boolean');

const isFiles: Check = value =>
  Array.isArray(value) && value.every(f => isObject(f) && typeof f.path === 'string' && isCount(f.size));

const TEXT: [Check, string] = [optional(isText), 'a string'];
const COUNT: [Check, string] = [optional(isCount), 'a whole number >= 0'];

/**
 * Every field a fold reads, by event type: the check it must pass and what it must be, in words. The
 * same table as `_FIELDS` of jupyter_promote/events/fold.py.
 */
const FIELDS: Record<string, [string, Check, string][]> = {
  status: [
    ['reason', ...TEXT],
    ['message', ...TEXT]
  ],
  image: [
    ['ref', ...TEXT],
    ['built', optional(value => typeof value === 'boolean'), 'true, false or null'],
    ['digest', ...TEXT]
  ],
  cell: [
    ['number', ...COUNT],
    ['own_number', ...COUNT],
    ['total', ...COUNT],
    ['own_total', ...COUNT],
    ['source', ...TEXT],
    ['ename', ...TEXT],
    ['evalue', ...TEXT]
  ],
  step: [
    ['steps', ...COUNT],
    ['steps_per_s', optional(value => isNumber(value) && value >= 0), 'a finite number >= 0']
  ],
  heartbeat: [['steps', ...COUNT]],
  metric: [['metrics', isMetrics, 'an object of finite numbers, booleans and strings']],
  gpu: [['devices', optional(value => Array.isArray(value) && value.every(isObject)), 'a list of objects']],
  alert: [
    ['kind', isText, 'a string'],
    ['message', ...TEXT]
  ],
  artifacts: [['files', isFiles, 'a list of {path: string, size: whole number >= 0}']],
  attempt: [
    ['number', optional(value => isCount(value) && (value as number) >= 1), 'a whole number >= 1'],
    ['reason', ...TEXT]
  ]
};

function shown(value: unknown): string {
  const text = String(JSON.stringify(value));
  return text.length <= 40 ? text : `${text.slice(0, 37)}...`;
}

/**
 * Why an event cannot be folded (one line), or null: the same rule as `problem()` of
 * jupyter_promote/events/fold.py, field for field. Such events are ignored: they move neither seq nor
 * the state.
 */
export function problem(event: unknown): string | null {
  if (!isObject(event) || !('ts' in event) || ('job' in event && typeof event.job !== 'string')) {
    return 'not written by jupyter-promote (no ts)';
  }
  const kind = event.type;
  if (typeof kind !== 'string' || !EVENT_TYPES.has(kind)) {
    return `unknown type ${shown(kind)}`;
  }
  const seq = event.seq;
  if (!isInteger(seq) || seq < 1) {
    return `seq ${shown(seq)} is not a positive whole number`;
  }
  if (!isNumber(event.ts)) {
    return `ts ${shown(event.ts)} is not a finite number`;
  }
  if (kind === 'status' && !(JOB_STATES as unknown[]).includes(event.state)) {
    return `unknown state ${shown(event.state)}`;
  }
  for (const [name, check, what] of FIELDS[kind] ?? []) {
    if (!check(event[name])) {
      const article = 'aeiou'.includes(kind[0]) ? 'an' : 'a';
      return `${article} ${kind} event whose ${name} is not ${what}: ${shown(event[name])}`;
    }
  }
  return null;
}
