import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { PromoteDialogExtension } from './dialog/registry';
// eslint-disable-next-line jupyter/prefer-lazy-imports -- activation needs it at once: the model follows job events from the start, to notify
import { JobsModel } from './jobs';
// eslint-disable-next-line jupyter/prefer-lazy-imports -- activation needs it at once: the model reads the jobs through it
import { PromoteService } from './api/service';
import { addCommandEntries, addPromoteCommand, addShowJobsCommand } from './plugin/commands';
import { followJobs } from './plugin/liveJobs';
import { followSettings } from './plugin/settings';
// eslint-disable-next-line jupyter/prefer-lazy-imports -- activation needs it at once: the sidebar is added to the shell and restored
import { addJobsSidebar } from './plugin/sidebar';
import { addToolbarButton } from './plugin/toolbar';
import { IPromoteDialogExtension } from './tokens';

const PLUGIN_ID = 'jupyter-promote:plugin';

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
    const trans = (translator ?? nullTranslator).load('jupyter_promote');
    const service = new PromoteService(app.serviceManager.serverSettings);
    const model = new JobsModel(service, app.serviceManager.events);
    let defaultTarget = 'local';

    const sidebar = addJobsSidebar(app, service, model, trans, restorer);
    followJobs(model, trans, sidebar.show);

    addPromoteCommand(app, {
      notebooks,
      browsers,
      model,
      trans,
      dialogSections,
      defaultTarget: () => defaultTarget,
      show: sidebar.show,
      showSchedules: sidebar.showSchedules
    });
    addShowJobsCommand(app, trans, sidebar.show);
    addCommandEntries(app, palette, trans);
    addToolbarButton(app, trans);

    if (settingRegistry) {
      followSettings(settingRegistry, PLUGIN_ID, settings => {
        defaultTarget = settings.defaultTarget;
        sidebar.panel.showFinished = settings.showFinished;
      });
    }
  }
};

export default [dialogExtension, plugin];
