/** The "Promote" button in every notebook's toolbar, after the cell type selector (or last when there is none). */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ToolbarButton } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { TranslationBundle } from '@jupyterlab/translation';

import { promoteIcon } from '../icon';
import { CommandIDs } from './commands';

/** Add the button to each notebook opened from now on; it runs the promote command on that notebook. */
export function addToolbarButton(app: JupyterFrontEnd, trans: TranslationBundle): void {
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
}
