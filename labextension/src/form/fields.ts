/**
 * The fields of the Promote dialog, derived from the generated `POST jobs` schema (api/schema.ts): a
 * field the schema gains is a compile error here until the dialog has an input for it. Maps a server
 * error's `field` to the dialog field that shows it. Pure, no JupyterLab import.
 */

import { IPromoteRequest, IRequestResources } from '../api/types';

/** The request's fields a person fills in: every one but the notebook (the one being promoted). */
export type RequestField = Exclude<keyof IPromoteRequest, 'notebook'>;

/** The resources a request may ask for: the schema's `resources` properties. */
export type ResourceName = keyof IRequestResources & string;

/** The monitor settings the dialog offers (the schema leaves `monitor` open: MonitorSettings' fields). */
export type MonitorField = 'stall_timeout_s' | 'nan_action';

/** What the monitor does on NaN/Inf; '' leaves the server's default (PromoteSettings.monitor_defaults). */
export type NanAction = '' | 'fail' | 'alert';

/** The stress workloads of a contention test ('' = none). */
export type ContentionKind = '' | 'cpu' | 'memory' | 'gpu';

/** A field of the dialog that shows an error beside it: a request field, or one of its parts. */
export type FormField = RequestField | `resources.${ResourceName}` | `monitor.${MonitorField}`;

/** Each resource's place in the dialog: a Record, so that every resource of the schema has one. */
const RESOURCE_ORDER: Record<ResourceName, number> = { cpus: 0, memory: 1, gpus: 2, time: 3 };

/** The schema's resources, in the order the dialog shows them. */
export const RESOURCE_NAMES: readonly ResourceName[] = (Object.keys(RESOURCE_ORDER) as ResourceName[]).sort(
  (a, b) => RESOURCE_ORDER[a] - RESOURCE_ORDER[b]
);

/** Every field that shows its own error: a Record, so that every field of the schema is listed. */
const SHOWS_ERROR: Record<FormField, true> = {
  target: true,
  kernel: true,
  parameters: true,
  resources: true,
  'resources.cpus': true,
  'resources.memory': true,
  'resources.gpus': true,
  'resources.time': true,
  monitor: true,
  'monitor.stall_timeout_s': true,
  'monitor.nan_action': true,
  deterministic: true,
  sweep: true,
  max_parallel: true,
  replicas: true,
  seeds: true,
  contention: true,
  notify: true,
  retries: true,
  secrets: true,
  data: true
};

/**
 * The fields of the form that show an error beside them (the dialog renders each one): every other
 * error is shown at the top of the dialog ('').
 */
export const FORM_FIELDS: readonly FormField[] = Object.keys(SHOWS_ERROR) as FormField[];

const SHOWN: readonly string[] = FORM_FIELDS;

/**
 * The form field that shows a server error, from the error's `field` (a dotted path into the `POST jobs`
 * body): the field itself when the form has it, a parameter's own field when the form shows that
 * parameter (`parameters.lr`), else the nearest field above it (`monitor.check_every` -> `monitor`),
 * else '' (the top of the dialog: `notebook`, `body`, null).
 */
export function formFieldOf(field: string | null | undefined, parameters: readonly string[] = []): string {
  if (!field) {
    return '';
  }
  if (field === 'gpus') {
    return 'resources.gpus'; // the freeze preview's GPU count is the form's
  }
  if (field.startsWith('parameters.')) {
    return parameters.includes(field.slice('parameters.'.length)) ? field : 'parameters';
  }
  if (SHOWN.includes(field)) {
    return field;
  }
  const head = field.split('.')[0];
  return SHOWN.includes(head) ? head : '';
}
