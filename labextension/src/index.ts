import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, Notification, ToolbarButton } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { CommandIDs, downloadArtifact, openOutput, promoteNotebook } from './commands';
import { promoteIcon } from './icon';
import { JobsModel } from './jobs';
import { PromoteRequestError } from './request';
import { PromoteService } from './service';
import { JobsPanel } from './sidebar/panel';

const PLUGIN_ID = 'jupyter-promote:plugin';

/**
 * jupyter-promote in JupyterLab: the "Promote to cluster" button (notebook toolbar, command palette,
 * file browser), its dialog, the live job sidebar, and notifications when a job ends or raises an alert.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Promote a notebook to a cluster job that behaves the same way.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, IFileBrowserFactory, ILayoutRestorer, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    palette: ICommandPalette | null,
    browsers: IFileBrowserFactory | null,
    restorer: ILayoutRestorer | null,
    settingRegistry: ISettingRegistry | null
  ) => {
    const service = new PromoteService(app.serviceManager.serverSettings);
    const model = new JobsModel(service, app.serviceManager.events);
    let defaultTarget = 'local';

    const panel = new JobsPanel(model, {
      cancel: async id => {
        await service.cancel(id).catch(reportError(`cancel job ${id}`));
        await model.catchUp(id);
      },
      rerun: async id => {
        const again = await service.rerun(id).catch(reportError(`rerun job ${id}`));
        if (again) {
          await model.add(again.id);
          panel.open(again.id);
        }
      },
      openOutput: detail => openOutput(app, model, detail),
      downloadArtifact: (id, artifact) => downloadArtifact(model, id, artifact)
    });
    panel.title.icon = promoteIcon;
    panel.title.caption = 'Promoted jobs';
    app.shell.add(panel, 'right', { rank: 900 });
    restorer?.add(panel, 'jupyter-promote-jobs');

    const show = (id: string | null) => {
      panel.open(id);
      app.shell.activateById(panel.id);
    };

    model.news.connect((_, news) => {
      const name = news.view.record.notebook.split('/').pop();
      const actions = [{ label: 'Show', callback: () => show(news.view.id) }];
      if (news.kind === 'alert') {
        Notification.warning(`${name}: ${news.event.kind} alert: ${news.event.message}`, { actions, autoClose: 8000 });
      } else if (news.view.state === 'succeeded') {
        Notification.success(`${name} succeeded on ${news.view.record.target}`, { actions, autoClose: 6000 });
      } else if (news.view.state === 'failed') {
        Notification.error(`${name} failed: ${news.view.reason ?? ''} ${news.view.message ?? ''}`.trim(), { actions, autoClose: false });
      } else {
        Notification.info(`${name} was cancelled`, { actions, autoClose: 4000 });
      }
    });
    model.refresh().catch(reason => {
      console.error(`jupyter-promote: the server extension did not answer: ${reason}`);
      Notification.error(`jupyter-promote: the server extension did not answer (${(reason as Error).message})`);
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
      label: args => (args.isPalette ? 'Promote Notebook to Cluster' : 'Promote to cluster'),
      caption: 'Run this notebook as a monitored cluster job with its frozen environment',
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
        return promoteNotebook(path, model, defaultTarget, id => show(id));
      }
    });
    app.commands.addCommand(CommandIDs.showJobs, {
      label: 'Show Promoted Jobs',
      execute: () => show(null)
    });
    palette?.addItem({ command: CommandIDs.promote, category: 'Promote', args: { isPalette: true } });
    palette?.addItem({ command: CommandIDs.showJobs, category: 'Promote' });
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
          label: 'Promote',
          tooltip: 'Promote to cluster',
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

function reportError(what: string): (error: unknown) => undefined {
  return error => {
    const message = error instanceof PromoteRequestError ? error.message : String(error);
    Notification.error(`${what}: ${message}`);
    return undefined;
  };
}

export default plugin;
