import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, Notification, showDialog, ToolbarButton } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';

import { PromoteDialogExtension } from './dialog/registry';
import { promoteIcon } from './icon';
// eslint-disable-next-line jupyter/prefer-lazy-imports -- activation needs it at once: the model follows job events from the start, to notify
import { JobsModel } from './jobs';
import { PromoteRequestError } from './api/request';
// eslint-disable-next-line jupyter/prefer-lazy-imports -- activation needs it at once: the model reads the jobs through it
import { PromoteService } from './api/service';
// eslint-disable-next-line jupyter/prefer-lazy-imports -- activation needs it at once: the sidebar is added to the shell and restored
import { JobsPanel } from './sidebar/panel';
import { IPromoteDialogExtension } from './tokens';

const PLUGIN_ID = 'jupyter-promote:plugin';

/** The extension's commands. */
const CommandIDs = {
  promote: 'jupyter-promote:promote-notebook',
  showJobs: 'jupyter-promote:show-jobs'
};

/**
 * The sections other extensions add to the Promote dialog: require IPromoteDialogExtension and call
 * `addSection` (a view, and what its value adds to the `POST jobs` request).
 */
const dialogExtension: JupyterFrontEndPlugin<IPromoteDialogExtension> = {
  id: 'jupyter-promote:dialog-extension',
  description: 'Lets other extensions add a section to the "Promote to cluster" dialog.',
  autoStart: true,
  provides: IPromoteDialogExtension,
  activate: (): IPromoteDialogExtension => new PromoteDialogExtension()
};

/**
 * jupyter-promote in JupyterLab: the "Promote to cluster" button (notebook toolbar, command palette,
 * file browser), its dialog, the live job sidebar, and notifications when a job ends or raises an alert.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Promote a notebook to a cluster job that behaves the same way.',
  autoStart: true,
  requires: [INotebookTracker, IPromoteDialogExtension],
  optional: [ICommandPalette, IFileBrowserFactory, ILayoutRestorer, ISettingRegistry, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    dialogSections: IPromoteDialogExtension,
    palette: ICommandPalette | null,
    browsers: IFileBrowserFactory | null,
    restorer: ILayoutRestorer | null,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null
  ) => {
    translator = translator ?? nullTranslator;
    const trans = translator.load('jupyter_promote');
    const service = new PromoteService(app.serviceManager.serverSettings);
    const model = new JobsModel(service, app.serviceManager.events);
    let defaultTarget = 'local';

    const panel = new JobsPanel(model, trans, {
      cancel: async id => {
        await service.cancel(id).catch(reportError(trans, trans.__('cancel job %1', id)));
        await model.catchUp(id);
      },
      remove: async id => {
        const name = model.get(id)?.record.notebook.split('/').pop() ?? id;
        const answer = await showDialog({
          title: trans.__('Delete job %1?', id),
          body: trans.__(
            'The job of %1, its events, logs, output notebook and every file it wrote are deleted. This cannot be undone.',
            name
          ),
          buttons: [
            Dialog.cancelButton(),
            Dialog.warnButton({ label: trans.__('Delete'), ariaLabel: trans.__('Delete') })
          ]
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
      },
      rerun: async id => {
        const again = await service.rerun(id).catch(reportError(trans, trans.__('rerun job %1', id)));
        if (again) {
          await model.add(again.id);
          panel.open(again.id);
        }
      },
      openOutput: async detail => (await import('./commands')).openOutput(app, model, detail, trans),
      downloadArtifact: async (id, artifact) =>
        (await import('./commands')).downloadArtifact(model, id, artifact, trans)
    });
    panel.title.icon = promoteIcon;
    panel.title.caption = trans.__('Promoted jobs');
    app.shell.add(panel, 'right', { rank: 900 });
    restorer?.add(panel, 'jupyter-promote-jobs');

    const show = (id: string | null) => {
      panel.open(id);
      app.shell.activateById(panel.id);
    };

    model.news.connect((_, news) => {
      const name = news.view.record.notebook.split('/').pop();
      const actions = [{ label: trans.__('Show'), callback: () => show(news.view.id) }];
      if (news.kind === 'alert') {
        Notification.warning(trans.__('%1: %2 alert: %3', name, news.event.kind, news.event.message), {
          actions,
          autoClose: 8000
        });
      } else if (news.view.state === 'succeeded') {
        Notification.success(trans.__('%1 succeeded on %2', name, news.view.record.target), {
          actions,
          autoClose: 6000
        });
      } else if (news.view.state === 'failed') {
        Notification.error(trans.__('%1 failed: %2 %3', name, news.view.reason ?? '', news.view.message ?? '').trim(), {
          actions,
          autoClose: false
        });
      } else {
        Notification.info(trans.__('%1 was cancelled', name), { actions, autoClose: 4000 });
      }
    });
    model.refresh().catch(reason => {
      console.error(`jupyter-promote: the server extension did not answer: ${reason}`);
      Notification.error(
        trans.__('jupyter-promote: the server extension did not answer (%1)', (reason as Error).message)
      );
    });

    /** The notebook the command is about: its argument, else the file browser's selection, else the current notebook. */
    const notebookPath = (args: Record<string, unknown>): string | null => {
      if (typeof args.path === 'string') {
        return args.path;
      }
      if (args.fromBrowser && browsers?.tracker.currentWidget) {
        const selected = browsers.tracker.currentWidget.selectedItems().next();
        if (selected && !selected.done && selected.value.type === 'notebook') {
          return selected.value.path;
        }
      }
      return notebooks.currentWidget?.context.path ?? null;
    };

    app.commands.addCommand(CommandIDs.promote, {
      label: args => (args.isPalette ? trans.__('Promote Notebook to Cluster') : trans.__('Promote to cluster')),
      caption: trans.__('Run this notebook as a monitored cluster job with its frozen environment'),
      describedBy: {
        args: {
          type: 'object',
          properties: {
            path: {
              type: 'string',
              description: trans.__('The notebook to promote (default: the selected or current notebook)')
            },
            fromBrowser: {
              type: 'boolean',
              description: trans.__("Whether to promote the file browser's selected notebook")
            },
            isPalette: {
              type: 'boolean',
              description: trans.__('Whether the command is shown in the command palette (its label)')
            }
          }
        }
      },
      icon: args => (args.isPalette ? undefined : promoteIcon),
      isEnabled: args => notebookPath(args) !== null,
      execute: async args => {
        const path = notebookPath(args);
        if (path === null) {
          return;
        }
        const widget = notebooks.find(w => w.context.path === path);
        if (widget?.context.model.dirty) {
          await widget.context.save(); // the job runs what is saved, and its baseline is the saved outputs
        }
        const { promoteNotebook } = await import('./commands');
        return promoteNotebook(path, model, defaultTarget, id => show(id), trans, dialogSections);
      }
    });
    app.commands.addCommand(CommandIDs.showJobs, {
      label: trans.__('Show Promoted Jobs'),
      describedBy: { args: { type: 'object', properties: {} } },
      execute: () => show(null)
    });
    const category = trans.__('Promote');
    palette?.addItem({ command: CommandIDs.promote, category, args: { isPalette: true } });
    palette?.addItem({ command: CommandIDs.showJobs, category });
    app.contextMenu.addItem({
      command: CommandIDs.promote,
      args: { fromBrowser: true },
      selector: '.jp-DirListing-item[data-file-type="notebook"]',
      rank: 20
    });
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: (notebook: NotebookPanel) => {
        const button = new ToolbarButton({
          icon: promoteIcon,
          label: trans.__('Promote'),
          tooltip: trans.__('Promote to cluster'),
          onClick: () => void app.commands.execute(CommandIDs.promote, { path: notebook.context.path })
        });
        if (!notebook.toolbar.insertAfter('cellType', 'promote', button)) {
          notebook.toolbar.addItem('promote', button);
        }
        return button;
      }
    });

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = () => {
            defaultTarget = (settings.get('defaultTarget').composite as string) || 'local';
            panel.showFinished = settings.get('showFinished').composite as boolean;
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason => console.error(`jupyter-promote: cannot load its settings: ${reason}`));
    }
  }
};

/** A rejection handler that says what failed, and why, in a notification. */
function reportError(trans: TranslationBundle, what: string): (error: unknown) => undefined {
  return error => {
    const message = error instanceof PromoteRequestError ? error.message : String(error);
    Notification.error(trans.__('%1: %2', what, message));
    return undefined;
  };
}

export default [dialogExtension, plugin];
