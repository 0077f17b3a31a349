import * as React from 'react';

import { useTranslation } from '../i18n';
import { JOB_STATES } from '../api/jobs';
import { JOBS_PAGE, PromoteService } from '../api/service';
import { duration, formatDuration, groupJobs, IJobGroup } from '../format';
import { IJobView, isFinal } from '../job/view';
import { groupKind, settledCount } from '../sweep';
import { SweepSummary } from './SweepSummary';

/**
 * One job's row. Rendered again only when its job changed (each change is a new view object) or, for a job
 * without an end, when the time moved on: one job's event does not render the other rows of a long list.
 */
const JobRow = React.memo(function JobRow(props: {
  view: IJobView;
  onOpen: (id: string) => void;
  now: number;
}): JSX.Element {
  const trans = useTranslation();
  const { view } = props;
  const parameters = Object.entries(view.record.parameters ?? {})
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(' ');
  const started = view.startedAt ?? view.record.created_at;
  return (
    <li className="jp-Promote-job" data-job={view.id} data-state={view.state}>
      <button
        className="jp-Promote-jobButton"
        onClick={() => props.onOpen(view.id)}
        title={trans.__('Job %1: %2', view.id, view.state)}
      >
        <span className={`jp-Promote-badge jp-Promote-state-${view.state}`}>{view.state}</span>
        {view.stage && !isFinal(view.state) && view.stage !== view.state && (
          <span className="jp-Promote-muted jp-Promote-stage" data-stage={view.stage}>
            {view.stage}
          </span>
        )}
        <span className="jp-Promote-jobName">{view.record.notebook.split('/').pop()}</span>
        <span className="jp-Promote-muted">{view.record.target}</span>
        {view.attempt > 1 && (
          <span className="jp-Promote-attempt" data-attempt={view.attempt}>
            {trans.__('attempt %1', view.attempt)}
          </span>
        )}
        {view.alerts.length > 0 && (
          <span className="jp-Promote-alertCount" title={trans.__('alerts')}>
            ⚠ {view.alerts.length}
          </span>
        )}
        <span className="jp-Promote-jobMeta">
          {parameters && <span className="jp-Promote-muted">{parameters}</span>}
          <span className="jp-Promote-muted">
            {new Date(started * 1000).toLocaleTimeString()}
            {duration(view, props.now) !== null ? ` · ${formatDuration(duration(view, props.now))}` : ''}
            {view.cellsTotal ? trans.__(' · cell %1/%2', view.cellsDone, view.cellsTotal) : ''}
            {!isFinal(view.state) && view.stepsPerS ? trans.__(' · %1 steps/s', view.stepsPerS.toFixed(1)) : ''}
          </span>
        </span>
      </button>
    </li>
  );
});

/** The time a row's duration is counted to: now for a job without an end, none (0) for the others. */
function rowNow(view: IJobView, now: number): number {
  return (view.finishedAt ?? view.record.finished_at ?? null) === null ? now : 0;
}

/** A group of jobs (a sweep, replicas or seeds, a contention test): its title opens its summary. */
function JobGroup(props: {
  group: IJobGroup & { sweep: string };
  views: IJobView[];
  service: PromoteService;
  onOpen: (id: string) => void;
  now: number;
}): JSX.Element {
  const trans = useTranslation();
  const [open, setOpen] = React.useState(false);
  const { group } = props;
  const kind = groupKind(group.jobs);
  const label = { grid: trans.__('sweep'), replicas: trans.__('replicas'), contention: trans.__('contention test') }[
    kind
  ];
  return (
    <li className="jp-Promote-sweep" data-sweep={group.sweep} data-kind={kind}>
      <button
        className="jp-Promote-jobButton jp-Promote-sweepTitle"
        aria-expanded={open}
        title={open ? trans.__('Hide the summary') : trans.__('Show the summary')}
        onClick={() => setOpen(!open)}
      >
        {open ? '▾ ' : '▸ '}
        {trans.__(
          '%1 %2 · %3/%4 succeeded',
          label,
          group.sweep.slice(0, 8),
          group.jobs.filter(j => j.state === 'succeeded').length,
          group.jobs[0].record.sweep?.size ?? group.jobs.length
        )}
      </button>
      {open && (
        <SweepSummary service={props.service} id={group.sweep} settled={settledCount(props.views, group.sweep)} />
      )}
      <ul>
        {group.jobs.map(view => (
          <JobRow key={view.id} view={view} onOpen={props.onOpen} now={rowNow(view, props.now)} />
        ))}
      </ul>
    </li>
  );
}

/** Every job loaded, newest first, groups together; filter by state; how many older ones are not loaded. */
export function JobList(props: {
  views: IJobView[];
  service: PromoteService;
  filter: string;
  showFinished: boolean;
  /** The server's jobs older than those loaded, and whether a page of them is being loaded. */
  older: number;
  loadingOlder: boolean;
  onLoadOlder: () => void;
  onFilter: (state: string) => void;
  onOpen: (id: string) => void;
}): JSX.Element {
  const trans = useTranslation();
  const now = Date.now() / 1000;
  const shown = props.views.filter(v =>
    props.filter ? v.state === props.filter : props.showFinished || !isFinal(v.state)
  );
  const groups = groupJobs(shown);
  return (
    <div className="jp-Promote-list">
      <label className="jp-Promote-filter">
        {trans.__('Show')}
        <select
          className="jp-mod-styled"
          aria-label={trans.__('Filter jobs by state')}
          value={props.filter}
          onChange={e => props.onFilter(e.target.value)}
        >
          <option value="">{props.showFinished ? trans.__('all jobs') : trans.__('live jobs')}</option>
          {JOB_STATES.map(state => (
            <option key={state} value={state}>
              {state}
            </option>
          ))}
        </select>
      </label>
      {groups.length === 0 && (
        <div className="jp-Promote-muted jp-Promote-empty">
          {trans.__('No jobs yet. Promote a notebook to see it here.')}
        </div>
      )}
      <ul className="jp-Promote-jobs" aria-label={trans.__('Jobs')}>
        {groups.map(group =>
          group.sweep === null ? (
            <JobRow
              key={group.jobs[0].id}
              view={group.jobs[0]}
              onOpen={props.onOpen}
              now={rowNow(group.jobs[0], now)}
            />
          ) : (
            <JobGroup
              key={group.sweep}
              group={group as IJobGroup & { sweep: string }}
              views={props.views}
              service={props.service}
              onOpen={props.onOpen}
              now={now}
            />
          )
        )}
      </ul>
      {props.older > 0 && (
        <div className="jp-Promote-older">
          <span className="jp-Promote-muted">
            {trans._n('%1 older job is not loaded.', '%1 older jobs are not loaded.', props.older)}
          </span>{' '}
          <button
            className="jp-Button jp-mod-styled jp-Promote-loadOlder"
            disabled={props.loadingOlder}
            onClick={props.onLoadOlder}
          >
            {trans._n('Show %1 older job', 'Show %1 older jobs', Math.min(props.older, JOBS_PAGE))}
          </button>
        </div>
      )}
    </div>
  );
}
