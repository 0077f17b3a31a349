/**
 * What the sidebar's buttons do to a job (cancel, delete, rerun, open its output, download an artifact):
 * every failure is shown in a notification, and a deletion asks first.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { PromoteRequestError } from '../api/request';
import { PromoteService } from '../api/service';
import { JobsModel } from '../jobs';
import { IJobActions } from '../sidebar/JobDetail';

/** The sidebar's job actions; `open` shows a job's detail (the rerun's). */
export function jobActions(
  app: JupyterFrontEnd,
  service: PromoteService,
  model: JobsModel,
  trans: TranslationBundle,
  open: (id: string) => void
): IJobActions {
  return {
    cancel: async id => {
      await service.cancel(id).catch(reportError(trans, trans.__('cancel job %1', id)));
      await model.catchUp(id);
    },
    remove: id => removeJob(service, model, trans, id),
    rerun: async id => {
      const again = await service.rerun(id).catch(reportError(trans, trans.__('rerun job %1', id)));
      if (again) {
        await model.add(again.id);
        open(again.id);
      }
    },
    openOutput: async detail => (await import('../commands')).openOutput(app, model, detail, trans),
    downloadArtifact: async (id, artifact) => (await import('../commands')).downloadArtifact(model, id, artifact, trans)
  };
}

/** Delete a job once the person confirms; whether it is gone (a job already deleted elsewhere counts). */
async function removeJob(
  service: PromoteService,
  model: JobsModel,
  trans: TranslationBundle,
  id: string
): Promise<boolean> {
  const name = model.get(id)?.record.notebook.split('/').pop() ?? id;
  const answer = await showDialog({
    title: trans.__('Delete job %1?', id),
    body: trans.__(
      'The job of %1, its events, logs, output notebook and every file it wrote are deleted. This cannot be undone.',
      name
    ),
    buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: trans.__('Delete'), ariaLabel: trans.__('Delete') })]
  });
  if (!answer.button.accept) {
    return false;
  }
  try {
    await service.remove(id);
  } catch (error) {
    if (!(error instanceof PromoteRequestError && error.status === 404)) {
      reportError(trans, trans.__('delete job %1', id))(error);
      return false;
    } // already gone (deleted from another tab or the CLI): forget it here too
  }
  model.forget(id);
  Notification.info(trans.__('Deleted job %1 (%2)', id, name), { autoClose: 4000 });
  return true;
}

/** A rejection handler that says what failed, and why, in a notification. */
function reportError(trans: TranslationBundle, what: string): (error: unknown) => undefined {
  return error => {
    const message = error instanceof PromoteRequestError ? error.message : String(error);
    Notification.error(trans.__('%1: %2', what, message));
    return undefined;
  };
}
