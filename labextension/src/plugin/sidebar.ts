/**
 * The job sidebar in the shell: added on the right, restored with the layout, and shown on demand
 * (the list, one job's detail, or the schedules).
 */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { TranslationBundle } from '@jupyterlab/translation';

import { PromoteService } from '../api/service';
import { promoteIcon } from '../icon';
import { JobsModel } from '../jobs';
import { SchedulesModel } from '../schedules';
import { JobsPanel } from '../sidebar/panel';
import { jobActions } from './jobActions';

/** The sidebar once it is in the shell. */
export interface IJobsSidebar {
  readonly panel: JobsPanel;
  /** Activate the sidebar on one job's detail, or on the list (`null`). */
  show(id: string | null): void;
  /** Activate the sidebar on the schedules. */
  showSchedules(): void;
}

/** Create the sidebar, add it to the shell and the layout restorer. */
export function addJobsSidebar(
  app: JupyterFrontEnd,
  service: PromoteService,
  model: JobsModel,
  trans: TranslationBundle,
  restorer: ILayoutRestorer | null
): IJobsSidebar {
  const panel: JobsPanel = new JobsPanel(
    model,
    trans,
    jobActions(app, service, model, trans, id => panel.open(id)),
    new SchedulesModel(service)
  );
  panel.title.icon = promoteIcon;
  panel.title.caption = trans.__('Promoted jobs');
  app.shell.add(panel, 'right', { rank: 900 });
  restorer?.add(panel, 'jupyter-promote-jobs');
  return {
    panel,
    show: id => {
      panel.open(id);
      app.shell.activateById(panel.id);
    },
    showSchedules: () => {
      panel.showTab('schedules');
      app.shell.activateById(panel.id);
    }
  };
}
