/**
 * The sidebar's schedules: each schedule (name, cron expression and time zone, next due time, paused or not,
 * the scheduler's last note) with its actions, and, expanded, the jobs it fired; a click on one shows it in
 * the job view. No JupyterLab widget import: Jest renders it.
 */

import * as React from 'react';

import { IJobRecord } from '../api/jobs';
import { ISchedule } from '../api/types';
import { dueText } from '../form/schedule';
import { useTranslation } from '../i18n';
import { SchedulesModel } from '../schedules';

export interface ISchedulesProps {
  model: SchedulesModel;
  /** Show a job in the job view. */
  onOpenJob: (id: string) => void;
  /** Ask the person to confirm a deletion (a dialog in JupyterLab). */
  confirm: (message: string) => Promise<boolean>;
}

/** One run of a schedule: its state, when it was created, and its parity verdict once it has one. */
function ScheduleRun(props: { record: IJobRecord; onOpenJob: (id: string) => void }): JSX.Element {
  const trans = useTranslation();
  const { record } = props;
  const verdict = record.parity?.verdict;
  return (
    <li className="jp-Promote-job" data-job={record.id} data-state={record.state}>
      <button
        className="jp-Promote-jobButton"
        onClick={() => props.onOpenJob(record.id)}
        title={trans.__('Job %1: %2', record.id, record.state)}
      >
        <span className={`jp-Promote-badge jp-Promote-state-${record.state}`}>{record.state}</span>
        <span className="jp-Promote-muted">{new Date(record.created_at * 1000).toLocaleString()}</span>
        {verdict && <span className="jp-Promote-verdict">{trans.__('parity: %1', verdict)}</span>}
      </button>
    </li>
  );
}

/** One schedule's row, its actions, and its runs when expanded. */
function ScheduleRow(props: ISchedulesProps & { schedule: ISchedule }): JSX.Element {
  const trans = useTranslation();
  const { model, schedule } = props;
  const [busy, setBusy] = React.useState(false);
  const expanded = model.isExpanded(schedule.id);
  const runs = model.runs(schedule.id);
  const act = (action: () => Promise<unknown>) => async () => {
    setBusy(true);
    try {
      await action();
    } finally {
      setBusy(false);
    }
  };
  const remove = async () => {
    if (await props.confirm(trans.__('Delete the schedule %1? The jobs it fired stay.', schedule.name))) {
      await model.remove(schedule.id);
    }
  };
  const next = schedule.next[0] ?? schedule.next_due_at;
  return (
    <li className="jp-Promote-scheduleItem" data-schedule={schedule.id} data-paused={schedule.paused}>
      <button
        className="jp-Promote-jobButton jp-Promote-scheduleTitle"
        aria-expanded={expanded}
        title={expanded ? trans.__('Hide its runs') : trans.__('Show its runs')}
        onClick={() => void model.toggle(schedule.id)}
      >
        {expanded ? '▾ ' : '▸ '}
        <span className="jp-Promote-jobName">{schedule.name}</span>
        {schedule.paused && <span className="jp-Promote-badge jp-Promote-paused">{trans.__('paused')}</span>}
        <span className="jp-Promote-jobMeta">
          <code>{schedule.cron}</code> <span className="jp-Promote-muted">{schedule.timezone}</span>
          <span className="jp-Promote-muted">
            {' · '}
            {schedule.paused || !next ? trans.__('no next run') : trans.__('next %1', dueText(next))}
          </span>
        </span>
      </button>
      {schedule.note && <div className="jp-Promote-muted jp-Promote-scheduleNote">{schedule.note}</div>}
      <div className="jp-Promote-scheduleActions">
        <button
          className="jp-Button jp-mod-styled"
          disabled={busy}
          onClick={act(() => (schedule.paused ? model.resume(schedule.id) : model.pause(schedule.id)))}
        >
          {schedule.paused ? trans.__('Resume') : trans.__('Pause')}
        </button>
        <button className="jp-Button jp-mod-styled" disabled={busy} onClick={act(() => model.runNow(schedule.id))}>
          {trans.__('Run now')}
        </button>
        <button className="jp-Button jp-mod-styled jp-mod-warn" disabled={busy} onClick={act(remove)}>
          {trans.__('Delete')}
        </button>
      </div>
      {expanded && (
        <ul className="jp-Promote-jobs jp-Promote-scheduleRuns" aria-label={trans.__('Runs of %1', schedule.name)}>
          {runs === undefined && <li className="jp-Promote-muted">{trans.__('loading its runs…')}</li>}
          {runs?.length === 0 && <li className="jp-Promote-muted">{trans.__('no run yet')}</li>}
          {runs?.map(record => (
            <ScheduleRun key={record.id} record={record} onOpenJob={props.onOpenJob} />
          ))}
        </ul>
      )}
    </li>
  );
}

/** The schedules, as loaded (what Jest renders). */
export function ScheduleList(props: ISchedulesProps): JSX.Element {
  const trans = useTranslation();
  const { model } = props;
  const schedules = model.schedules;
  return (
    <div className="jp-Promote-schedules">
      {model.problem && (
        <div className="jp-Promote-fieldError" role="alert">
          {model.problem}
        </div>
      )}
      {schedules === null && <div className="jp-Promote-muted jp-Promote-empty">{trans.__('loading…')}</div>}
      {schedules?.length === 0 && (
        <div className="jp-Promote-muted jp-Promote-empty">
          {trans.__('No schedules yet. Choose "On a schedule" when you promote a notebook.')}
        </div>
      )}
      <ul className="jp-Promote-jobs" aria-label={trans.__('Schedules')}>
        {schedules?.map(schedule => (
          <ScheduleRow key={schedule.id} {...props} schedule={schedule} />
        ))}
      </ul>
    </div>
  );
}

/** The schedules, read again on the job list's cadence while they are shown. */
export function SchedulesView(props: ISchedulesProps): JSX.Element {
  React.useEffect(() => {
    const following = props.model.follow();
    return () => following.dispose();
  }, [props.model]);
  return <ScheduleList {...props} />;
}
