import { Notification } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { TranslationContext } from '../i18n';
import { JobsModel } from '../jobs';
import { IJobActions, JobDetail } from './JobDetail';
import { JobList } from './JobList';

/**
 * The sidebar: the job list, or one job's detail. The changes of the jobs are rendered once per animation
 * frame: a burst of events, each its own message from the server, renders once, not once per event.
 */
export class JobsPanel extends ReactWidget {
  constructor(
    readonly model: JobsModel,
    private readonly trans: TranslationBundle,
    private readonly actions: IJobActions
  ) {
    super();
    this.id = 'jupyter-promote-jobs';
    this.addClass('jp-Promote-panel');
    model.changed.connect(this._onChanged, this);
  }

  dispose(): void {
    this.model.changed.disconnect(this._onChanged, this);
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

  render(): JSX.Element {
    return <TranslationContext.Provider value={this.trans}>{this._content()}</TranslationContext.Provider>;
  }

  private _content(): JSX.Element {
    const view = this._selected ? this.model.get(this._selected) : undefined;
    if (view) {
      return <JobDetail key={view.id} model={this.model} view={view} actions={this.actions} onBack={this._onBack} />;
    }
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
  private _filter = '';
  private _showFinished = true;
  private _frame = 0;
}
