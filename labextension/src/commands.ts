import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { artifactName } from './artifacts';
import { IArtifact } from './api/jobs';
import { PromoteRequestError } from './api/request';
import { IJobDetail, IPromoteResponse } from './api/types';
import { askPromote, IPromoteChoice } from './dialog/dialog';
import { formFieldOf } from './form/fields';
import { toRequest } from './form/form';
import { FieldError } from './form/parse';
import { dueText, scheduleFieldOf, toScheduleRequest } from './form/schedule';
import { JobsModel } from './jobs';
import { outputCopyPath } from './output';
import { IPromoteDialogExtension } from './tokens';

/**
 * Promote a notebook: the dialog (with the sections other extensions added), then `POST jobs`, or, "On a
 * schedule", `POST schedules` with the same job request (then the sidebar's schedules are shown and no job id
 * is returned). A refused request opens the dialog again with the server's message beside the field it
 * names; nothing fails silently.
 */
export async function promoteNotebook(
  path: string,
  model: JobsModel,
  defaultTarget: string,
  show: (id: string) => void,
  trans: TranslationBundle,
  extension: IPromoteDialogExtension,
  showSchedules?: () => void
): Promise<string | null> {
  let previous: IPromoteChoice | null = null;
  let errors: Record<string, string> = {};
  for (;;) {
    const sections = extension.sections;
    const choice = await askPromote(model.service, trans, path, previous, defaultTarget, errors, sections);
    if (choice === null) {
      return null;
    }
    previous = choice;
    const scheduled = choice.schedule.mode === 'schedule';
    let submitted: IPromoteResponse;
    let target: string;
    try {
      const request = toRequest(path, choice.form, choice.preview?.parameters ?? [], sections);
      target = request.target ?? choice.form.target;
      if (scheduled) {
        const schedule = await model.service.createSchedule(toScheduleRequest(request, choice.schedule));
        const next = schedule.next[0] ? dueText(schedule.next[0]) : trans.__('none');
        Notification.success(trans.__('Schedule %1 created: next run %2', schedule.name, next), { autoClose: 6000 });
        showSchedules?.();
        return null;
      }
      submitted = await model.service.submit(request);
    } catch (error) {
      const shown = (choice.preview?.parameters ?? []).map(p => p.name);
      if (error instanceof FieldError) {
        errors = { [error.field]: error.message };
      } else if (error instanceof PromoteRequestError) {
        errors = { [(scheduled ? scheduleFieldOf : formFieldOf)(error.field, shown)]: error.message };
      } else {
        Notification.error(trans.__('Promote %1: %2', path, (error as Error).message));
        return null;
      }
      continue;
    }
    // submitted: from here on a failure is the sidebar's, never a reason to submit again
    const ids = submitted.ids ?? [submitted.id];
    show(submitted.id);
    const group: Record<string, string> = {
      grid: trans.__('Promoted %1: a sweep of %2 jobs on %3', path, ids.length, target),
      replicas: trans.__('Promoted %1: %2 replicas on %3', path, ids.length, target),
      contention: trans.__('Promoted %1: a contention test of %2 jobs on %3', path, ids.length, target)
    };
    Notification.info(
      ids.length > 1 || submitted.kind
        ? (group[submitted.kind ?? 'grid'] ?? group.grid)
        : trans.__('Promoted %1 to %2', path, target),
      { autoClose: 4000 }
    );
    await Promise.all(ids.map(id => model.add(id))).catch(reason =>
      console.error(`jupyter-promote: job ${submitted.id}: ${reason}`)
    );
    return submitted.id;
  }
}

/** Copy a job's output notebook next to its source notebook and open it. */
export async function openOutput(
  app: JupyterFrontEnd,
  model: JobsModel,
  detail: IJobDetail,
  trans: TranslationBundle
): Promise<void> {
  if (!detail.notebook_path) {
    Notification.warning(
      trans.__("Job %1: its notebook is outside the server's root; the output is in %2", detail.id, detail.run_dir)
    );
    return;
  }
  try {
    const content = await model.service.output(detail.id);
    const contents = app.serviceManager.contents;
    // a copy the user opened and edited before is never overwritten: the next free name
    const path = await outputCopyPath(detail.notebook_path, detail.id, p =>
      contents.get(p, { content: false }).then(
        () => true,
        () => false
      )
    );
    await contents.save(path, { type: 'notebook', format: 'json', content });
    await app.commands.execute('docmanager:open', { path });
  } catch (error) {
    Notification.error(trans.__('Job %1: cannot open its output: %2', detail.id, (error as Error).message));
  }
}

/**
 * Download one of a job's artifacts: fetched with the server connection's credentials (token or
 * cookie, whichever the server uses), then saved through an object URL under its own name.
 */
export async function downloadArtifact(
  model: JobsModel,
  id: string,
  artifact: IArtifact,
  trans: TranslationBundle
): Promise<void> {
  let blob: Blob;
  try {
    blob = await model.service.artifact(id, artifact.path);
  } catch (error) {
    Notification.error(trans.__('Job %1: cannot download %2: %3', id, artifact.path, (error as Error).message));
    return;
  }
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = artifactName(artifact.path);
  link.style.display = 'none';
  document.body.appendChild(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000); // after the browser has taken the bytes
}
