/**
 * The "Promote to cluster" form: what a person typed, and the `POST jobs` body it becomes.
 * Pure (no JupyterLab import): Jest tests it, the dialog renders it.
 */

import { parseParameter } from './model';
import { IKernelSpec, INotifications, IParameter, IPromoteRequest } from './tokens';

export interface IPromoteForm {
  target: string;
  /** The kernelspec chosen to run the job with; '' = the notebook's own (then none is sent). */
  kernel: string;
  /** parameter name -> the text in its field */
  parameters: Record<string, string>;
  resources: { cpus: string; memory: string; gpus: string; time: string };
  /** nan_action '' leaves the server's default (PromoteSettings.monitor_defaults) */
  monitor: { stall_timeout_s: string; nan_action: '' | 'fail' | 'alert' };
  deterministic: boolean;
  /** "lr = 0.1, 0.01" lines: one job per combination */
  sweep: string;
  maxParallel: string;
  /** Run the same job this many times ('' = once): a replica group. */
  replicas: string;
  /** "0, 1, 2": one job per seed (each replicated when replicas is set too). */
  seeds: string;
  /** Run the job alone and beside a stress workload: its kind ('' = no contention test) and amount. */
  contention: { kind: ContentionKind; amount: string };
  /**
   * The notification destinations ticked (their names; [] = notify nobody); null while the server has
   * offered none (then nothing is sent and its defaults apply).
   */
  notify: string[] | null;
}

/** The stress workloads of a contention test ('' = none). */
export type ContentionKind = '' | 'cpu' | 'memory' | 'gpu';

export function emptyForm(target: string): IPromoteForm {
  return {
    target,
    kernel: '',
    parameters: {},
    resources: { cpus: '', memory: '', gpus: '', time: '' },
    monitor: { stall_timeout_s: '', nan_action: '' },
    deterministic: false,
    sweep: '',
    maxParallel: '',
    replicas: '',
    seeds: '',
    contention: { kind: '', amount: '' },
    notify: null
  };
}

/** A form value that cannot be sent, with the field it concerns (shown beside that field). */
export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string
  ) {
    super(message);
    this.name = 'FieldError';
  }
}

function wholeNumber(field: string, text: string, minimum: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < minimum) {
    throw new FieldError(field, `${text}: must be a whole number of at least ${minimum}`);
  }
  return n;
}

/** Parse the seeds field: comma-separated whole numbers ("0, 1, 2"); none when it is empty. */
export function parseSeeds(text: string): number[] {
  return text
    .split(',')
    .map(item => item.trim())
    .filter(item => item.length > 0)
    .map(item => {
      const n = Number(item);
      if (!/^\d+$/.test(item) || !Number.isSafeInteger(n)) {
        throw new FieldError('seeds', `${item}: seeds are whole numbers separated by commas`);
      }
      return n;
    });
}

/** A memory size as the server reads one (512M, 4G, 2GiB; a plain number is MiB). */
const MEMORY_SIZE = /^\d+(\.\d+)?\s*[kmgt]?(i?b)?$/i;

/**
 * The contention test to ask for: "cpu", "cpu:N" (N burners), "memory", "memory:SIZE" or "gpu"; undefined
 * when there is none. The amount is ignored for gpu (and for none), as the form disables its field.
 */
export function parseContention(kind: ContentionKind, amount: string): string | undefined {
  const text = amount.trim();
  switch (kind) {
    case 'cpu':
      return text ? `cpu:${wholeNumber('contention', text, 1)}` : 'cpu';
    case 'memory':
      if (text && !MEMORY_SIZE.test(text)) {
        throw new FieldError('contention', `${text}: not a memory size (use e.g. 512M, 4G, 2GiB)`);
      }
      return text ? `memory:${text.replace(/\s+/g, '')}` : 'memory';
    case 'gpu':
      return 'gpu';
    default:
      return undefined;
  }
}

/** Parse the sweep lines (`name = v1, v2`), each value typed as that parameter's default is. */
export function parseSweep(text: string, parameters: IParameter[]): Record<string, unknown[]> {
  const types = new Map(parameters.map(p => [p.name, p.type]));
  const grid: Record<string, unknown[]> = {};
  for (const raw of text.split(/[\n;]/)) {
    const line = raw.trim();
    if (!line) {
      continue;
    }
    const at = line.indexOf('=');
    const name = line.slice(0, at).trim();
    if (at < 1 || !/^[A-Za-z_]\w*$/.test(name)) {
      throw new FieldError('sweep', `${line}: expected "name = value, value, ..."`);
    }
    if (!types.has(name)) {
      throw new FieldError('sweep', `${name}: not a parameter of this notebook`);
    }
    const type = types.get(name)!;
    const values = line
      .slice(at + 1)
      .split(',')
      .map(v => v.trim())
      .filter(v => v.length > 0);
    if (values.length === 0) {
      throw new FieldError('sweep', `${name}: no values`);
    }
    grid[name] = values.map(v => {
      try {
        return parseParameter(type, v);
      } catch (e) {
        throw new FieldError('sweep', `${name} = ${v}: ${(e as Error).message}`);
      }
    });
  }
  return grid;
}

/** The `POST jobs` body for a form; a value that cannot be sent raises a FieldError naming its field. */
export function toRequest(notebook: string, form: IPromoteForm, parameters: IParameter[]): IPromoteRequest {
  const request: IPromoteRequest = { notebook, target: form.target };
  if (form.kernel) {
    request.kernel = form.kernel;
  }
  const values: Record<string, unknown> = {};
  for (const parameter of parameters) {
    const text = form.parameters[parameter.name];
    if (text === undefined || text === parameter.default) {
      continue; // unchanged: the notebook's own default applies, as in papermill
    }
    let value: unknown;
    try {
      value = parseParameter(parameter.type, text);
    } catch (e) {
      throw new FieldError(`parameters.${parameter.name}`, `${parameter.name}: ${(e as Error).message}`);
    }
    if (parameter.literal && JSON.stringify(value) === JSON.stringify(parameter.value)) {
      continue; // the default, spelled otherwise (1.0 as 1)
    }
    values[parameter.name] = value;
  }
  if (Object.keys(values).length > 0) {
    request.parameters = values;
  }
  const resources: Record<string, string | number> = {};
  const { cpus, memory, gpus, time } = form.resources;
  if (cpus.trim()) {
    resources.cpus = wholeNumber('resources.cpus', cpus.trim(), 1);
  }
  if (gpus.trim()) {
    resources.gpus = wholeNumber('resources.gpus', gpus.trim(), 0);
  }
  if (memory.trim()) {
    resources.memory = memory.trim();
  }
  if (time.trim()) {
    resources.time = time.trim();
  }
  if (Object.keys(resources).length > 0) {
    request.resources = resources;
  }
  const monitor: Record<string, string | number> = {};
  if (form.monitor.nan_action) {
    monitor.nan_action = form.monitor.nan_action;
  }
  const stall = form.monitor.stall_timeout_s.trim();
  if (stall) {
    const seconds = Number(stall);
    if (!Number.isFinite(seconds) || seconds <= 0) {
      throw new FieldError('monitor.stall_timeout_s', `${stall}: must be a positive number of seconds`);
    }
    monitor.stall_timeout_s = seconds;
  }
  if (Object.keys(monitor).length > 0) {
    request.monitor = monitor;
  }
  if (form.deterministic) {
    request.deterministic = true;
  }
  const grid = parseSweep(form.sweep, parameters);
  if (Object.keys(grid).length > 0) {
    request.sweep = grid;
    if (form.maxParallel.trim()) {
      request.max_parallel = wholeNumber('max_parallel', form.maxParallel.trim(), 1);
    }
  }
  const contention = parseContention(form.contention.kind, form.contention.amount);
  if (contention !== undefined) {
    request.contention = contention;
  }
  if (form.replicas.trim()) {
    request.replicas = wholeNumber('replicas', form.replicas.trim(), 1);
  }
  const seeds = parseSeeds(form.seeds);
  if (seeds.length > 0) {
    request.seeds = seeds;
  }
  if (request.replicas !== undefined || request.seeds !== undefined) {
    const field = request.replicas !== undefined ? 'replicas' : 'seeds';
    if (request.sweep) {
      throw new FieldError(field, `${field} cannot be combined with a sweep (sweep a seed parameter instead)`);
    }
    if (request.contention) {
      throw new FieldError(field, `${field} cannot be combined with a contention test`);
    }
  }
  if (form.notify !== null) {
    request.notify = [...form.notify]; // always explicit once destinations are offered: [] is "nobody"
  }
  return request;
}

/**
 * The destinations ticked once the server has said which there are: what was ticked already (a
 * dialog opened again after an error), else its defaults; only names it offers; null when it offers none.
 */
export function notifyChoice(ticked: string[] | null, offered: INotifications): string[] | null {
  const names = offered.destinations.map(d => d.name);
  if (names.length === 0) {
    return null;
  }
  return (ticked ?? offered.defaults).filter(name => names.includes(name));
}

/** The form's `kernel` for a kernelspec picked in the dialog: '' when it is the notebook's own (sent only when it differs). */
export function kernelChoice(picked: string, own: string | null): string {
  return picked === own ? '' : picked;
}

/**
 * The kernels the dialog offers: those installed, and the notebook's own and the one chosen even
 * when they are not (so the select shows what will run; the server says why that kernel cannot).
 */
export function kernelOptions(installed: IKernelSpec[], own: string | null, chosen: string): IKernelSpec[] {
  const options = [...installed];
  for (const name of [own, chosen]) {
    if (name && !options.some(k => k.name === name)) {
      options.push({ name, display_name: `${name} (not installed)` });
    }
  }
  return options;
}

/** The GPUs the form asks for, for the freeze preview's gpu check: undefined while the field is empty or not a count. */
export function requestedGpus(form: IPromoteForm): number | undefined {
  const text = form.resources.gpus.trim();
  const n = Number(text);
  return text && Number.isInteger(n) && n >= 0 ? n : undefined;
}

/**
 * The fields of the form that show an error beside them (the dialog renders each one): every other
 * error is shown at the top of the dialog ('').
 */
export const FORM_FIELDS: readonly string[] = [
  'target',
  'kernel',
  'parameters',
  'resources',
  'resources.cpus',
  'resources.memory',
  'resources.gpus',
  'resources.time',
  'monitor',
  'monitor.stall_timeout_s',
  'monitor.nan_action',
  'deterministic',
  'sweep',
  'max_parallel',
  'replicas',
  'seeds',
  'contention',
  'notify'
];

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
  if (FORM_FIELDS.includes(field)) {
    return field;
  }
  const head = field.split('.')[0];
  return FORM_FIELDS.includes(head) ? head : '';
}
