/**
 * The "Promote to cluster" form: what a person typed, one entry per field of the generated `POST jobs`
 * schema, and the request it becomes. Pure (no JupyterLab import): Jest tests it, the dialog renders it.
 */

import { IParameter, IPromoteRequest, IRequestResources } from '../api/types';
import { parseParameter } from '../parameters';
import type { IPromoteDialogSection } from '../tokens';
import { ContentionKind, NanAction, RequestField } from './fields';
import { FieldError, parseContention, parseData, parseSecrets, parseSeeds, parseSweep, wholeNumber } from './parse';

/** How a person enters each field of the request: text where the request wants a number or a list. */
interface IFieldInputs {
  target: string;
  /** The kernelspec chosen to run the job with; '' = the notebook's own (then none is sent). */
  kernel: string;
  /** parameter name -> the text in its field */
  parameters: Record<string, string>;
  resources: Record<keyof IRequestResources, string>;
  /** nan_action '' leaves the server's default (PromoteSettings.monitor_defaults) */
  monitor: { stall_timeout_s: string; nan_action: NanAction };
  deterministic: boolean;
  /** "lr = 0.1, 0.01" lines: one job per combination */
  sweep: string;
  max_parallel: string;
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
  /** Attempts after the first when the infrastructure fails the job ('' = none). */
  retries: string;
  /** "NAME=URL" lines: inputs on storage the cluster reads (s3://bucket/prefix). */
  data: string;
  /** "NAME" or "NAME=SOURCE" lines (SOURCE env:VAR, file:PATH, kubernetes:SECRET/KEY, node-file:PATH). */
  secrets: string;
}

/**
 * The form: one input per request field (a field the schema gains fails to compile here until
 * IFieldInputs says how it is entered), and the values of the sections other extensions added.
 */
export type IPromoteForm = { [K in RequestField]: IFieldInputs[K] } & {
  /** section id -> its value (see IPromoteDialogExtension) */
  sections: Record<string, unknown>;
};

export function emptyForm(target: string, sections: readonly IPromoteDialogSection[] = []): IPromoteForm {
  return {
    target,
    kernel: '',
    parameters: {},
    resources: { cpus: '', memory: '', gpus: '', time: '' },
    monitor: { stall_timeout_s: '', nan_action: '' },
    deterministic: false,
    sweep: '',
    max_parallel: '',
    replicas: '',
    seeds: '',
    contention: { kind: '', amount: '' },
    notify: null,
    retries: '',
    secrets: '',
    data: '',
    sections: Object.fromEntries(sections.map(section => [section.id, section.initial]))
  };
}

/** The parameters that differ from the notebook's defaults, typed as those defaults are. */
function parameterValues(form: IPromoteForm, parameters: IParameter[]): Record<string, unknown> {
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
  return values;
}

function resourcesOf(form: IPromoteForm): IRequestResources {
  const resources: IRequestResources = {};
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
  return resources;
}

function monitorOf(form: IPromoteForm): Record<string, string | number> {
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
  return monitor;
}

/** Set `request[field]` to `value` unless it is empty (an object without keys, an empty list). */
function setIfAny<K extends keyof IPromoteRequest>(request: IPromoteRequest, field: K, value: IPromoteRequest[K]) {
  if (Array.isArray(value) ? value.length > 0 : Object.keys(value ?? {}).length > 0) {
    request[field] = value;
  }
}

/** The group a request asks for: a sweep, replicas and seeds, a contention test (not two of them). */
function addGroup(request: IPromoteRequest, form: IPromoteForm, parameters: IParameter[]): void {
  const grid = parseSweep(form.sweep, parameters);
  if (Object.keys(grid).length > 0) {
    request.sweep = grid;
    if (form.max_parallel.trim()) {
      request.max_parallel = wholeNumber('max_parallel', form.max_parallel.trim(), 1);
    }
  }
  const contention = parseContention(form.contention.kind, form.contention.amount);
  if (contention !== undefined) {
    request.contention = contention;
  }
  if (form.replicas.trim()) {
    request.replicas = wholeNumber('replicas', form.replicas.trim(), 1);
  }
  setIfAny(request, 'seeds', parseSeeds(form.seeds));
  if (request.replicas !== undefined || request.seeds !== undefined) {
    const field = request.replicas !== undefined ? 'replicas' : 'seeds';
    if (request.sweep) {
      throw new FieldError(field, `${field} cannot be combined with a sweep (sweep a seed parameter instead)`);
    }
    if (request.contention) {
      throw new FieldError(field, `${field} cannot be combined with a contention test`);
    }
  }
}

/**
 * The `POST jobs` body for a form, with what each added section contributes; a value that cannot be
 * sent raises a FieldError naming its field.
 */
export function toRequest(
  notebook: string,
  form: IPromoteForm,
  parameters: IParameter[],
  sections: readonly IPromoteDialogSection[] = []
): IPromoteRequest {
  const request: IPromoteRequest = { notebook, target: form.target };
  if (form.kernel) {
    request.kernel = form.kernel;
  }
  setIfAny(request, 'parameters', parameterValues(form, parameters));
  setIfAny(request, 'resources', resourcesOf(form));
  setIfAny(request, 'monitor', monitorOf(form));
  if (form.deterministic) {
    request.deterministic = true;
  }
  addGroup(request, form, parameters);
  if (form.retries.trim()) {
    request.retries = wholeNumber('retries', form.retries.trim(), 0);
  }
  setIfAny(request, 'secrets', parseSecrets(form.secrets));
  setIfAny(request, 'data', parseData(form.data));
  if (form.notify !== null) {
    request.notify = [...form.notify]; // always explicit once destinations are offered: [] is "nobody"
  }
  return sections.reduce(
    (body, section) => section.contribute(form.sections[section.id] ?? section.initial, body),
    request
  );
}
