import * as React from 'react';

import { artifactsToShow } from '../artifacts';
import { useTranslation } from '../i18n';
import { JobsModel } from '../jobs';
import { IArtifact } from '../api/jobs';
import { IEnvironmentCard, IJobDetail } from '../api/types';
import { duration, explainAlert, formatDuration } from '../format';
import { IJobView, isFinal } from '../job/view';
import { Artifacts } from './Artifacts';
import { EnvironmentTable } from './EnvironmentTable';
import { JobHeader } from './JobHeader';
import { LogTail, useLog } from './Log';
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

  return (
    <div className="jp-Promote-detail" data-job={view.id}>
      <JobHeader
        view={view}
        detail={detail}
        actions={actions}
        busy={busy}
        live={live}
        act={act}
        onBack={props.onBack}
        reportHref={model.service.reportUrl(view.id)}
      />
      <Progress view={view} now={Date.now() / 1000} />
      <Charts view={view} />
      <Metrics view={view} detail={detail} />
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

/** The stages the job went through, its progress, its alerts and the cell that failed. */
function Progress(props: { view: IJobView; now: number }): JSX.Element {
  const trans = useTranslation();
  const { view, now } = props;
  return (
    <>
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
    </>
  );
}

/** Steps per second, the reported metrics and GPU memory over time. */
function Charts(props: { view: IJobView }): JSX.Element {
  const trans = useTranslation();
  const { view } = props;
  const metricSeries = Object.entries(view.series.metrics).map(([label, points]) => ({ label, points }));
  const gpuSeries = Object.entries(view.series.gpuMemory).map(([label, points]) => ({ label, points }));
  const stepsPerS = trans.__('steps/s');
  const startedAt = view.startedAt ?? view.record.started_at;
  return (
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
  );
}

/** The metrics last reported, and the parity verdict. */
function Metrics(props: { view: IJobView; detail: IJobDetail | null }): JSX.Element {
  const trans = useTranslation();
  const { view } = props;
  const parity = props.detail?.parity ?? view.record.parity;
  return (
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
  );
}
