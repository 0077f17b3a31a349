import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { TranslationContext } from '../i18n';
import { JobsModel } from '../jobs';
import { SchedulesModel } from '../schedules';
import { IJobActions, JobDetail } from './JobDetail';
import { JobList } from './JobList';
import { SchedulesView } from './Schedules';

/** The sidebar's views of a list: the jobs, or the schedules. */
export type SidebarTab = 'jobs' | 'schedules';

/**
 * The sidebar: the job list or the schedules (two tabs), or one job's detail. The changes of the jobs are rendered once per animation
 * frame: a burst of events, each its own message from the server, renders once, not once per event.
 */
export class JobsPanel extends ReactWidget {
  constructor(
    readonly model: JobsModel,
    private readonly trans: TranslationBundle,
    private readonly actions: IJobActions,
    readonly schedules: SchedulesModel
  ) {
    super();
    this.id = 'jupyter-promote-jobs';
    this.addClass('jp-Promote-panel');
    model.changed.connect(this._onChanged, this);
    schedules.changed.connect(this._onChanged, this);
  }

  dispose(): void {
    this.model.changed.disconnect(this._onChanged, this);
    this.schedules.dispose();
    cancelAnimationFrame(this._frame);
    super.dispose();
  }

  /** Settings: whether the unfiltered list shows finished jobs too. */
  set showFinished(value: boolean) {
    this._showFinished = value;
    this.update();
  }

  /** Show one job's detail. */
  open(id: string | null): void {
    this._selected = id;
    this.update();
  }

  /** Show the list of the jobs or of the schedules. */
  showTab(tab: SidebarTab): void {
    this._tab = tab;
    this._selected = null;
    this.update();
  }

  render(): JSX.Element {
    return <TranslationContext.Provider value={this.trans}>{this._content()}</TranslationContext.Provider>;
  }

  private _content(): JSX.Element {
    const view = this._selected ? this.model.get(this._selected) : undefined;
    if (view) {
      return <JobDetail key={view.id} model={this.model} view={view} actions={this.actions} onBack={this._onBack} />;
    }
    const tab = (name: SidebarTab, label: string) => (
      <button
        role="tab"
        aria-selected={this._tab === name}
        className={`jp-Promote-tab${this._tab === name ? ' jp-mod-active' : ''}`}
        onClick={() => this.showTab(name)}
      >
        {label}
      </button>
    );
    return (
      <>
        <div className="jp-Promote-tabs" role="tablist">
          {tab('jobs', this.trans.__('Jobs'))}
          {tab('schedules', this.trans.__('Schedules'))}
        </div>
        {this._tab === 'jobs' ? (
          this._jobList()
        ) : (
          <SchedulesView model={this.schedules} onOpenJob={this._onOpenRun} confirm={this._confirm} />
        )}
      </>
    );
  }

  private _jobList(): JSX.Element {
    return (
      <JobList
        views={this.model.views}
        service={this.model.service}
        filter={this._filter}
        showFinished={this._showFinished}
        older={this.model.older}
        loadingOlder={this.model.loadingOlder}
        onLoadOlder={this._onLoadOlder}
        onFilter={this._onFilter}
        onOpen={this._onOpen}
      />
    );
  }

  private _onChanged(): void {
    if (this._frame === 0) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        this.update();
      });
    }
  }

  // the same functions every render: a row whose job did not change is not rendered again (React.memo)
  private readonly _onOpen = (id: string): void => this.open(id);
  private readonly _onBack = (): void => this.open(null);
  /** A schedule's run: loaded into the job list if it is not there yet, then shown. */
  private readonly _onOpenRun = (id: string): void => {
    this.model.add(id).then(
      () => this.open(id),
      reason => Notification.error(this.trans.__('Job %1: %2', id, (reason as Error).message))
    );
  };
  private readonly _confirm = async (message: string): Promise<boolean> => {
    const result = await showDialog({
      title: this.trans.__('Delete schedule'),
      body: message,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: this.trans.__('Delete') })]
    });
    return result.button.accept;
  };
  private readonly _onFilter = (state: string): void => {
    this._filter = state;
    this.update();
  };
  private readonly _onLoadOlder = (): void => {
    this.model
      .loadOlder()
      .catch(reason =>
        Notification.error(
          this.trans.__('jupyter-promote: the older jobs did not load (%1)', (reason as Error).message)
        )
      );
  };

  private _selected: string | null = null;
  private _tab: SidebarTab = 'jobs';
  private _filter = '';
  private _showFinished = true;
  private _frame = 0;
}
