import * as React from 'react';

import { artifactsToShow } from '../artifacts';
import { useTranslation } from '../i18n';
import { JobsModel } from '../jobs';
import { duration, explainAlert, formatDuration, IArtifact, IJobView, isFinal } from '../model';
import { IEnvironmentCard, IJobDetail } from '../tokens';
import { Artifacts } from './Artifacts';
import { Chart } from './Chart';

/** What the detail view asks of the application (kept out of the view so it stays a plain component). */
export interface IJobActions {
  cancel(id: string): Promise<void>;
  /** Delete a finished job (record, events, run directory) once the person confirms; whether it was deleted. */
  remove(id: string): Promise<boolean>;
  rerun(id: string): Promise<void>;
  openOutput(detail: IJobDetail): Promise<void>;
  /** Save one of the job's artifacts (a failure is the application's to show). */
  downloadArtifact(id: string, artifact: IArtifact): Promise<void>;
}

const LOG_TAIL_CHARS = 64 * 1024;
const LOG_POLL_MS = 2000;

/** Follow one of a job's logs while the view is open: appended text, the last 64 kB kept. */
function useLog(model: JobsModel, id: string, stream: 'job' | 'build', live: boolean): string {
  const [text, setText] = React.useState('');
  const offset = React.useRef(0);
  React.useEffect(() => {
    offset.current = 0; // another job or log: start again
    setText('');
  }, [id, stream]);
  React.useEffect(() => {
    let stopped = false;
    let timer = 0;
    const read = async () => {
      for (;;) {
        let chunk: { text: string; offset: number };
        try {
          chunk = await model.service.logs(id, offset.current, stream);
        } catch {
          break; // the job may be gone; the next read says so again
        }
        if (stopped || chunk.offset <= offset.current) {
          break;
        }
        offset.current = chunk.offset;
        setText(t => (t + chunk.text).slice(-LOG_TAIL_CHARS));
      }
      if (!stopped && live) {
        timer = window.setTimeout(read, LOG_POLL_MS);
      }
    };
    void read();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [id, stream, live]);
  return text;
}

/**
 * A log tail in a box of its own height that scrolls (the job's controls stay where they are), and
 * follows what is appended while the reader is at its end; scrolled up, it stays where they put it.
 */
function LogTail(props: { text: string; label: string }): JSX.Element {
  const box = React.useRef<HTMLPreElement>(null);
  const following = React.useRef(true);
  React.useLayoutEffect(() => {
    if (box.current && following.current) {
      box.current.scrollTop = box.current.scrollHeight;
    }
  }, [props.text]);
  return (
    <pre
      ref={box}
      className="jp-Promote-log"
      tabIndex={0}
      aria-label={props.label}
      onScroll={e => {
        const el = e.currentTarget;
        following.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
      }}
    >
      {props.text}
    </pre>
  );
}

function EnvironmentTable(props: {
  job: IEnvironmentCard | null;
  kernel: IEnvironmentCard | null;
  loading: boolean;
}): JSX.Element {
  const trans = useTranslation();
  const rows: [string, (card: IEnvironmentCard) => string][] = [
    ['Python', c => c.python ?? ''],
    ['torch', c => c.torch ?? '—'],
    ['CUDA', c => c.cuda ?? '—'],
    ['cuDNN', c => (c.cudnn === null ? '—' : String(c.cudnn))],
    ['CPU', c => c.cpu ?? ''],
    ['GPU', c => (c.gpu ? JSON.stringify(c.gpu) : '—')],
    [trans.__('packages'), c => String(c.packages)]
  ];
  const names = new Set([
    ...Object.keys(props.job?.key_packages ?? {}),
    ...Object.keys(props.kernel?.key_packages ?? {})
  ]);
  for (const name of names) {
    if (name !== 'torch') {
      rows.push([name, c => c.key_packages[name] ?? '—']);
    }
  }
  rows.push([trans.__('lock'), c => (c.content_hash ?? '').slice(7, 19)]);
  return (
    <table className="jp-Promote-envTable">
      <thead>
        <tr>
          <th />
          <th scope="col">{trans.__('job')}</th>
          <th scope="col">{trans.__('notebook kernel now')}</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(([label, value]) => {
          const a = props.job ? value(props.job) : '';
          const b = props.kernel ? value(props.kernel) : props.loading ? '…' : '';
          const differs = props.job !== null && props.kernel !== null && a !== b;
          return (
            <tr key={label} className={differs ? 'jp-Promote-differs' : ''}>
              <th scope="row">{label}</th>
              <td>{a}</td>
              <td>{b}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** One job: stage timeline, alerts, charts, metrics, parity, logs, artifacts, environment, and its actions. */
export function JobDetail(props: {
  model: JobsModel;
  view: IJobView;
  actions: IJobActions;
  onBack: () => void;
}): JSX.Element {
  const trans = useTranslation();
  const { model, view, actions } = props;
  const live = !isFinal(view.state);
  const [detail, setDetail] = React.useState<IJobDetail | null>(null);
  const [kernel, setKernel] = React.useState<IEnvironmentCard | null>(null);
  const [kernelLoading, setKernelLoading] = React.useState(false);
  const [busy, setBusy] = React.useState(false);
  const jobLog = useLog(model, view.id, 'job', live);
  const buildLog = useLog(model, view.id, 'build', live && view.state === 'pending');

  React.useEffect(() => {
    void model.catchUp(view.id);
  }, [view.id]);
  React.useEffect(() => {
    model.service.job(view.id).then(setDetail, () => undefined);
  }, [view.id, view.state]);

  const compareKernel = async () => {
    if (!detail?.notebook_path) {
      return;
    }
    setKernelLoading(true);
    try {
      setKernel((await model.service.freeze(detail.notebook_path)).environment);
    } finally {
      setKernelLoading(false);
    }
  };
  const act = (action: () => Promise<void>) => async () => {
    setBusy(true);
    try {
      await action();
    } finally {
      setBusy(false);
    }
  };
  const now = Date.now() / 1000;
  const metricSeries = Object.entries(view.series.metrics).map(([label, points]) => ({ label, points }));
  const gpuSeries = Object.entries(view.series.gpuMemory).map(([label, points]) => ({ label, points }));
  const parity = detail?.parity ?? view.record.parity;
  const stepsPerS = trans.__('steps/s');
  const startedAt = view.startedAt ?? view.record.started_at;

  return (
    <div className="jp-Promote-detail" data-job={view.id}>
      {/* who the job is and what can be done with it: kept in view while the rest scrolls */}
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

      <section aria-label={trans.__('Stages')}>
        <h4>{trans.__('Stages')}</h4>
        <ol className="jp-Promote-stages">
          {view.stages.map((stage, i) => (
            <li key={`${i}-${stage.name}`} data-stage={stage.name}>
              <span>{stage.name === 'finished' ? view.state : stage.name}</span>
              <span className="jp-Promote-muted">
                {stage.name === 'finished' ? '' : formatDuration((stage.end ?? now) - stage.start)}
              </span>
            </li>
          ))}
        </ol>
        <div className="jp-Promote-muted">
          {view.cellsTotal ? trans.__('cells %1/%2', view.cellsDone, view.cellsTotal) : ''}
          {view.steps ? trans._n(' · %1 step', ' · %1 steps', view.steps) : ''}
          {duration(view, now) !== null ? ` · ${formatDuration(duration(view, now))}` : ''}
        </div>
      </section>

      {view.alerts.length > 0 && (
        <section aria-label={trans.__('Alerts')}>
          <h4>{trans.__('Alerts')}</h4>
          <ul className="jp-Promote-alerts">
            {view.alerts.map(alert => (
              <li key={alert.seq} className="jp-Promote-alert" data-kind={alert.kind}>
                <strong>{alert.kind}</strong> {alert.message}
                {alert.action === 'fail' ? trans.__(' (the job was stopped)') : ''}
                <div className="jp-Promote-explain">{explainAlert(alert.kind)}</div>
              </li>
            ))}
          </ul>
        </section>
      )}
      {view.failedCell && (
        <section aria-label={trans.__('Failed cell')} className="jp-Promote-alert">
          <strong>{trans.__('cell %1: %2', String(view.failedCell.number), String(view.failedCell.ename))}</strong>{' '}
          {String(view.failedCell.evalue ?? '')}
        </section>
      )}

      <section aria-label={trans.__('Charts')}>
        <h4>{trans.__('Charts')}</h4>
        <Chart
          title={stepsPerS}
          series={[{ label: stepsPerS, points: view.series.stepsPerS }]}
          startedAt={startedAt}
          unit={stepsPerS}
        />
        {metricSeries.length > 0 && (
          <Chart title={trans.__('reported metrics')} series={metricSeries} startedAt={startedAt} />
        )}
        {gpuSeries.length > 0 && (
          <Chart
            title={trans.__('GPU memory (GiB)')}
            series={gpuSeries}
            startedAt={startedAt}
            unit="GiB"
            scale={2 ** 30}
          />
        )}
      </section>

      <section aria-label={trans.__('Metrics')}>
        <h4>{trans.__('Metrics')}</h4>
        {Object.keys(view.metrics).length === 0 ? (
          <div className="jp-Promote-muted">{trans.__('none reported yet')}</div>
        ) : (
          <table className="jp-Promote-metrics">
            <tbody>
              {Object.entries(view.metrics).map(([name, value]) => (
                <tr key={name}>
                  <th scope="row">{name}</th>
                  <td>{typeof value === 'number' ? value.toPrecision(6) : String(value)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {parity && (
          <div className={`jp-Promote-parity jp-Promote-parity-${parity.verdict.replace(' ', '-')}`}>
            {parity.failed?.length
              ? trans.__('parity with the notebook: %1 (%2)', parity.verdict, parity.failed.join(', '))
              : trans.__('parity with the notebook: %1', parity.verdict)}
          </div>
        )}
      </section>

      <section aria-label={trans.__('Log')}>
        <h4>{trans.__('Log')}</h4>
        <LogTail text={jobLog || trans.__('(nothing yet)')} label={trans.__('Job log')} />
        {buildLog && (
          <details>
            <summary>{trans.__('Image build log')}</summary>
            <LogTail text={buildLog} label={trans.__('Build log')} />
          </details>
        )}
      </section>

      <Artifacts
        artifacts={artifactsToShow(detail, view.record)}
        href={path => model.service.artifactUrl(view.id, path)}
        onDownload={artifact => actions.downloadArtifact(view.id, artifact)}
      />

      <section aria-label={trans.__('Environment')}>
        <h4>{trans.__('Environment')}</h4>
        <EnvironmentTable job={detail?.environment ?? null} kernel={kernel} loading={kernelLoading} />
        <button
          className="jp-Button jp-mod-styled"
          disabled={kernelLoading || !detail?.notebook_path}
          onClick={() => void compareKernel()}
        >
          {trans.__("Compare with the notebook's kernel")}
        </button>
      </section>
    </div>
  );
}
