/**
 * A job's artifacts (the files it wrote in its working directory): their addresses and sizes as a
 * person reads them. Pure (no JupyterLab import): Jest tests it, the sidebar renders it.
 */

import { IArtifact } from './api/jobs';

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

/** A size in bytes as JupyterLab's file browser shows one: powers of 1024, at most one decimal ("1.5 KB"). */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) {
    return '?';
  }
  let value = bytes;
  let unit = 0;
  while (unit < UNITS.length - 1 && Math.round(value * 10) / 10 >= 1024) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : parseFloat(value.toFixed(1))} ${UNITS[unit]}`;
}

/**
 * The API end point of an artifact, relative to `/jupyter-promote/`: each segment of its path
 * encoded, its '/' separators kept (`jobs/ab12/artifacts/ckpt/model%20v2.pt`).
 */
export function artifactEndPoint(id: string, path: string): string {
  const segments = path.split('/').filter(segment => segment.length > 0 && segment !== '.');
  return ['jobs', encodeURIComponent(id), 'artifacts', ...segments.map(encodeURIComponent)].join('/');
}

/**
 * The API end point of a finished job's report (`report.html`), relative to `/jupyter-promote/`: opened
 * in the browser (the server serves it in a sandbox), or with `download` saved as a file.
 */
export function reportEndPoint(id: string, download = false): string {
  return ['jobs', encodeURIComponent(id), 'report'].join('/') + (download ? '?download=1' : '');
}

/** The name a downloaded artifact is saved under: the last segment of its path. */
export function artifactName(path: string): string {
  return (
    path
      .split('/')
      .filter(segment => segment.length > 0)
      .pop() ?? 'artifact'
  );
}

/** The artifacts to list: the detail's once it has come, else the record's, else null (not known yet). */
export function artifactsToShow(
  detail: { artifacts?: IArtifact[] } | null,
  record: { artifacts?: IArtifact[] }
): IArtifact[] | null {
  return detail ? (detail.artifacts ?? []) : (record.artifacts ?? null);
}
