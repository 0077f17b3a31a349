/**
 * The dialog's text fields read as request values: whole numbers, seeds, a sweep's grid, a contention
 * test. A value that cannot be sent raises a FieldError naming the field it concerns. Pure, no
 * JupyterLab import.
 */

import { IParameter } from '../api/types';
import { parseParameter } from '../parameters';
import { ContentionKind } from './fields';

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

export function wholeNumber(field: string, text: string, minimum: number): number {
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

/**
 * Parse the secrets field: one secret per line, "NAME" (from the server's environment variable NAME) or
 * "NAME=SOURCE"; the server checks each source and says which one is not there.
 */
export function parseSecrets(text: string): Record<string, string> {
  const secrets: Record<string, string> = {};
  for (const line of text.split('\n').map(item => item.trim())) {
    if (!line) {
      continue;
    }
    const cut = line.indexOf('=');
    const name = (cut < 0 ? line : line.slice(0, cut)).trim();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new FieldError('secrets', `${name}: not an environment variable's name (letters, digits and '_')`);
    }
    secrets[name] = cut < 0 ? `env:${name}` : line.slice(cut + 1).trim();
  }
  return secrets;
}

/** Parse the data field: one input per line, "NAME=URL"; the server checks that each is there. */
export function parseData(text: string): Record<string, string> {
  const data: Record<string, string> = {};
  for (const line of text.split('\n').map(item => item.trim())) {
    if (!line) {
      continue;
    }
    const cut = line.indexOf('=');
    const name = cut < 0 ? line : line.slice(0, cut).trim();
    if (cut < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new FieldError('data', `${name}: give each input as NAME=URL (e.g. train=s3://bucket/prefix)`);
    }
    if (name in data) {
      throw new FieldError('data', `${name}: given twice`);
    }
    data[name] = line.slice(cut + 1).trim();
  }
  return data;
}
