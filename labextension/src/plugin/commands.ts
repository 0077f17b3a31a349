/**
 * The extension's commands and where they appear: "Promote to cluster" (a notebook's path, the file
 * browser's selection, or the current notebook) and "Show Promoted Jobs", in the command palette and
 * the file browser's context menu on notebooks.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';

import { promoteIcon } from '../icon';
import type { JobsModel } from '../jobs';
import type { IPromoteDialogExtension } from '../tokens';

/** The extension's command ids. */
export const CommandIDs = {
  promote: 'jupyter-promote:promote-notebook',
  showJobs: 'jupyter-promote:show-jobs'
};

/** What the promote command works with. */
export interface IPromoteCommandContext {
  notebooks: INotebookTracker;
  browsers: IFileBrowserFactory | null;
  model: JobsModel;
  trans: TranslationBundle;
  dialogSections: IPromoteDialogExtension;
  /** The target the dialog starts on (the settings', read when the command runs). */
  defaultTarget: () => string;
  show: (id: string) => void;
  /** Show the sidebar's schedules (after a schedule is created). */
  showSchedules: () => void;
}

/** The notebook the command is about: its argument, else the file browser's selection, else the current notebook. */
function notebookPath(context: IPromoteCommandContext, args: Record<string, unknown>): string | null {
  if (typeof args.path === 'string') {
    return args.path;
  }
  const browser = context.browsers?.tracker.currentWidget;
  if (args.fromBrowser && browser) {
    const selected = browser.selectedItems().next();
    if (selected && !selected.done && selected.value.type === 'notebook') {
      return selected.value.path;
    }
  }
  return context.notebooks.currentWidget?.context.path ?? null;
}

/** Register "Promote to cluster": save the notebook if it has changes, then the dialog and the request. */
export function addPromoteCommand(app: JupyterFrontEnd, context: IPromoteCommandContext): void {
  const { trans } = context;
  app.commands.addCommand(CommandIDs.promote, {
    label: args => (args.isPalette ? trans.__('Promote Notebook to Cluster') : trans.__('Promote to cluster')),
    caption: trans.__('Run this notebook as a monitored cluster job with its frozen environment'),
    describedBy: { args: promoteArgsSchema(trans) },
    icon: args => (args.isPalette ? undefined : promoteIcon),
    isEnabled: args => notebookPath(context, args) !== null,
    execute: async args => {
      const path = notebookPath(context, args);
      if (path === null) {
        return;
      }
      const widget = context.notebooks.find(w => w.context.path === path);
      if (widget?.context.model.dirty) {
        await widget.context.save(); // the job runs what is saved, and its baseline is the saved outputs
      }
      const { promoteNotebook } = await import('../commands');
      const { model, dialogSections, show, showSchedules } = context;
      const target = context.defaultTarget();
      return promoteNotebook(path, model, target, id => show(id), trans, dialogSections, showSchedules);
    }
  });
}

/** The promote command's arguments, described for the command's callers. */
function promoteArgsSchema(trans: TranslationBundle) {
  return {
    type: 'object' as const,
    properties: {
      path: {
        type: 'string' as const,
        description: trans.__('The notebook to promote (default: the selected or current notebook)')
      },
      fromBrowser: {
        type: 'boolean' as const,
        description: trans.__("Whether to promote the file browser's selected notebook")
      },
      isPalette: {
        type: 'boolean' as const,
        description: trans.__('Whether the command is shown in the command palette (its label)')
      }
    }
  };
}

/** Register "Show Promoted Jobs": the sidebar, on the job list. */
export function addShowJobsCommand(app: JupyterFrontEnd, trans: TranslationBundle, show: (id: null) => void): void {
  app.commands.addCommand(CommandIDs.showJobs, {
    label: trans.__('Show Promoted Jobs'),
    describedBy: { args: { type: 'object', properties: {} } },
    execute: () => show(null)
  });
}

/** Both commands in the palette (category "Promote"), and promote in the file browser's menu on notebooks. */
export function addCommandEntries(
  app: JupyterFrontEnd,
  palette: ICommandPalette | null,
  trans: TranslationBundle
): void {
  const category = trans.__('Promote');
  palette?.addItem({ command: CommandIDs.promote, category, args: { isPalette: true } });
  palette?.addItem({ command: CommandIDs.showJobs, category });
  app.contextMenu.addItem({
    command: CommandIDs.promote,
    args: { fromBrowser: true },
    selector: '.jp-DirListing-item[data-file-type="notebook"]',
    rank: 20
  });
}
