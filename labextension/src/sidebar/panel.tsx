import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget, UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { TranslationContext } from '../i18n';
import { JobsModel } from '../jobs';
import { IJobActions, JobDetail } from './JobDetail';
import { JobList } from './JobList';

/** The sidebar: the job list, or one job's detail. */
export class JobsPanel extends ReactWidget {
  constructor(
    readonly model: JobsModel,
    private readonly trans: TranslationBundle,
    private readonly actions: IJobActions
  ) {
    super();
    this.id = 'jupyter-promote-jobs';
    this.addClass('jp-Promote-panel');
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
    return (
      <TranslationContext.Provider value={this.trans}>
        <UseSignal signal={this.model.changed}>
          {() => {
            const view = this._selected ? this.model.get(this._selected) : undefined;
            if (view) {
              return (
                <JobDetail
                  key={view.id}
                  model={this.model}
                  view={view}
                  actions={this.actions}
                  onBack={() => this.open(null)}
                />
              );
            }
            return (
              <JobList
                views={this.model.views}
                service={this.model.service}
                filter={this._filter}
                showFinished={this._showFinished}
                onFilter={state => {
                  this._filter = state;
                  this.update();
                }}
                onOpen={id => this.open(id)}
              />
            );
          }}
        </UseSignal>
      </TranslationContext.Provider>
    );
  }

  private _selected: string | null = null;
  private _filter = '';
  private _showFinished = true;
}
