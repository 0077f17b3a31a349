/**
 * The top of a job's detail view, kept in view while the rest scrolls: who the job is (notebook,
 * state, target) and what can be done with it (cancel, rerun, open its output or its report, delete).
 */

import * as React from 'react';

import { IJobDetail } from '../api/types';
import { useTranslation } from '../i18n';
import { IJobView } from '../job/view';
import type { IJobActions } from './JobDetail';

export function JobHeader(props: {
  view: IJobView;
  detail: IJobDetail | null;
  actions: IJobActions;
  busy: boolean;
  live: boolean;
  /** Run an action with the buttons disabled until it is done. */
  act: (action: () => Promise<void>) => () => Promise<void>;
  onBack: () => void;
  /** The address of the job's report (written once it ended; the server opens it in a sandbox). */
  reportHref: string;
}): JSX.Element {
  const trans = useTranslation();
  const { view, detail, actions, busy, live, act } = props;
  return (
    <div className="jp-Promote-detailTop">
      <div className="jp-Promote-detailHeader">
        <button
          className="jp-Button jp-mod-minimal"
          onClick={props.onBack}
          aria-label={trans.__('Back to the job list')}
        >
          {trans.__('← Jobs')}
        </button>
        <span className={`jp-Promote-badge jp-Promote-state-${view.state}`} data-state={view.state}>
          {view.state}
        </span>
        {view.reason && view.state !== 'succeeded' && <span className="jp-Promote-reason">{view.reason}</span>}
        {view.attempt > 1 && (
          <span className="jp-Promote-attempt" title={trans.__('Started again after an infrastructure failure')}>
            {trans.__('attempt %1', view.attempt)}
          </span>
        )}
      </div>
      <h3 className="jp-Promote-title">{view.record.notebook.split('/').pop()}</h3>
      <div className="jp-Promote-muted">
        {view.record.target} · {view.id}
        {view.message ? ` · ${view.message}` : ''}
      </div>
      <div className="jp-Promote-actions">
        {live && (
          <button
            className="jp-Button jp-mod-styled jp-mod-warn"
            disabled={busy}
            onClick={act(() => actions.cancel(view.id))}
          >
            {trans.__('Cancel')}
          </button>
        )}
        <button className="jp-Button jp-mod-styled" disabled={busy} onClick={act(() => actions.rerun(view.id))}>
          {trans.__('Rerun')}
        </button>
        <button
          className="jp-Button jp-mod-styled"
          disabled={busy || detail === null || view.state === 'pending'}
          onClick={act(() => actions.openOutput(detail!))}
        >
          {trans.__('Open output')}
        </button>
        {!live && (
          <a
            className="jp-Button jp-mod-styled jp-Promote-report"
            href={props.reportHref}
            target="_blank"
            rel="noopener noreferrer"
            title={trans.__('The report of this job: verdict, alerts, parameters, environment and its notebook')}
          >
            {trans.__('Report')}
          </a>
        )}
        {!live && (
          <button
            className="jp-Button jp-mod-styled jp-mod-warn"
            disabled={busy}
            title={trans.__('Delete this job: its record, events and run directory')}
            onClick={act(async () => {
              if (await actions.remove(view.id)) {
                props.onBack();
              }
            })}
          >
            {trans.__('Delete')}
          </button>
        )}
      </div>
    </div>
  );
}
