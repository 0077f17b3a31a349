/**
 * The "When" section of the Promote dialog: run the job now, or on a schedule (a cron expression in a
 * time zone, a name, what to do about missed and overlapping runs, whether to freeze the notebook at
 * each run), with the next five due times as the server computes them.
 */

import * as React from 'react';

import { PromoteRequestError, PromoteService } from '../api/service';
import { MissedPolicy, OverlapPolicy } from '../api/types';
import { dueText, IScheduleForm, RunMode } from '../form/schedule';
import { useTranslation } from '../i18n';
import { CheckboxField, FieldErrors, SelectField, TextField } from './fields';

/** How long the cron expression and time zone must stay put before their due times are asked for (ms). */
const SETTLE_MS = 400;

/** The server's next due times of the schedule typed, or why it cannot say. */
export interface IDuePreview {
  next: string[];
  /** The server's one-line refusal (a cron expression that is not one, an unknown time zone), or null. */
  problem: string | null;
  loading: boolean;
}

const NO_PREVIEW: IDuePreview = { next: [], problem: null, loading: false };

/** The next due times of `cron` in `timezone`, asked for again once they settle; a late answer is dropped. */
export function useDuePreview(service: PromoteService, cron: string, timezone: string, enabled: boolean): IDuePreview {
  const [state, setState] = React.useState<IDuePreview>(NO_PREVIEW);
  const latest = React.useRef(0);
  React.useEffect(() => {
    const ask = ++latest.current;
    if (!enabled || !cron.trim() || !timezone.trim()) {
      setState(NO_PREVIEW);
      return;
    }
    setState(s => ({ ...s, loading: true }));
    const timer = window.setTimeout(() => {
      service.previewSchedule(cron.trim(), timezone.trim()).then(
        next => latest.current === ask && setState({ next, problem: null, loading: false }),
        error =>
          latest.current === ask &&
          setState({
            next: [],
            problem: error instanceof PromoteRequestError ? error.message : String(error?.message ?? error),
            loading: false
          })
      );
    }, SETTLE_MS);
    return () => window.clearTimeout(timer);
  }, [service, cron, timezone, enabled]);
  return state;
}

/** The section's fields, given the due-time preview (what Jest renders). */
export function ScheduleFields(props: {
  schedule: IScheduleForm;
  onChange: (change: Partial<IScheduleForm>) => void;
  errors: FieldErrors;
  due: IDuePreview;
}): JSX.Element {
  const trans = useTranslation();
  const { schedule, errors, due } = props;
  const mode = (value: RunMode, label: string) => (
    <label className="jp-Promote-checkbox">
      <input
        type="radio"
        name="jp-Promote-runMode"
        aria-label={label}
        value={value}
        checked={schedule.mode === value}
        onChange={() => props.onChange({ mode: value })}
      />
      {label}
    </label>
  );
  return (
    <fieldset className="jp-Promote-schedule" data-mode={schedule.mode}>
      <legend>{trans.__('When')}</legend>
      <div className="jp-Promote-runMode">
        {mode('now', trans.__('Run now'))}
        {mode('schedule', trans.__('On a schedule'))}
      </div>
      {schedule.mode === 'schedule' && (
        <>
          <TextField
            field="schedule.cron"
            errors={errors}
            label={trans.__('Cron')}
            title={trans.__('Five fields: minute hour day month weekday ("0 3 * * *": 03:00 each day)')}
            ariaLabel={trans.__('Cron expression')}
            placeholder="0 3 * * *"
            value={schedule.cron}
            onChange={cron => props.onChange({ cron })}
          />
          <TextField
            field="schedule.timezone"
            errors={errors}
            label={trans.__('Time zone')}
            ariaLabel={trans.__('Time zone')}
            placeholder={trans.__('e.g. Europe/Berlin')}
            value={schedule.timezone}
            onChange={timezone => props.onChange({ timezone })}
          />
          <TextField
            field="schedule.name"
            errors={errors}
            label={trans.__('Name')}
            ariaLabel={trans.__('Schedule name')}
            placeholder={trans.__("the notebook's name")}
            value={schedule.name}
            onChange={name => props.onChange({ name })}
          />
          <SelectField<MissedPolicy>
            field="schedule.missed"
            errors={errors}
            label={trans.__('Missed runs')}
            ariaLabel={trans.__('Missed runs')}
            value={schedule.missed}
            onChange={missed => props.onChange({ missed })}
          >
            <option value="latest">{trans.__('run the latest once')}</option>
            <option value="all">{trans.__('run each')}</option>
            <option value="skip">{trans.__('skip them')}</option>
          </SelectField>
          <SelectField<OverlapPolicy>
            field="schedule.overlap"
            errors={errors}
            label={trans.__('While the previous run goes on')}
            ariaLabel={trans.__('Overlap')}
            value={schedule.overlap}
            onChange={overlap => props.onChange({ overlap })}
          >
            <option value="skip">{trans.__('skip the run')}</option>
            <option value="queue">{trans.__('queue it')}</option>
            <option value="allow">{trans.__('run it anyway')}</option>
          </SelectField>
          <CheckboxField
            field="schedule.freeze"
            errors={errors}
            label={trans.__('Re-freeze the notebook at each run')}
            title={trans.__('Off: the notebook as it is now runs each time')}
            ariaLabel={trans.__('Re-freeze at each run')}
            checked={schedule.refreeze}
            onChange={refreeze => props.onChange({ refreeze })}
          />
          <div className="jp-Promote-dueTimes" aria-live="polite">
            {due.problem ? (
              <div className="jp-Promote-fieldError" role="alert" data-field="schedule.preview">
                {due.problem}
              </div>
            ) : due.next.length > 0 ? (
              <>
                <span className="jp-Promote-muted">{trans.__('Next runs')}</span>
                <ol aria-label={trans.__('Next runs')}>
                  {due.next.map(time => (
                    <li key={time} title={time}>
                      {dueText(time)}
                    </li>
                  ))}
                </ol>
              </>
            ) : (
              <span className="jp-Promote-muted">
                {due.loading ? trans.__('computing the next runs…') : trans.__('type a cron expression')}
              </span>
            )}
          </div>
        </>
      )}
    </fieldset>
  );
}

/** The section: its fields and the server's due times of what is typed. */
export function ScheduleSection(props: {
  service: PromoteService;
  schedule: IScheduleForm;
  onChange: (change: Partial<IScheduleForm>) => void;
  errors: FieldErrors;
}): JSX.Element {
  const { service, schedule } = props;
  const due = useDuePreview(service, schedule.cron, schedule.timezone, schedule.mode === 'schedule');
  return <ScheduleFields {...props} due={due} />;
}
