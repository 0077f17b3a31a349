/**
 * The dialog's choices that depend on what the server offers: the notification destinations, the
 * kernels, and the GPU count the freeze preview is asked for. Pure, no JupyterLab import.
 */

import { IKernelSpec, INotifications } from '../api/types';
import { IPromoteForm } from './form';

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
