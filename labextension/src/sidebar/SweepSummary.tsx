import * as React from 'react';

import { useTranslation } from '../i18n';
import { PromoteService } from '../api/service';
import { contentionRates, divergenceValues, formatValue, stateCounts } from '../sweep';
import { ISweepSummary } from '../api/groups';

/**
 * The summary of a group of jobs (`GET sweeps/{id}`): counts by state, each metric across the tasks,
 * whether replicas agree, the seed band, and a contention test's steps/s alone and under stress. Asked
 * for again whenever `settled` (how many of its jobs have ended) changes.
 */
export function SweepSummary(props: { service: PromoteService; id: string; settled: number }): JSX.Element {
  const trans = useTranslation();
  const [summary, setSummary] = React.useState<ISweepSummary | null>(null);
  const [problem, setProblem] = React.useState<string | null>(null);

  React.useEffect(() => {
    let current = true;
    props.service.sweep(props.id).then(
      found => {
        if (current) {
          setSummary(found);
          setProblem(null);
        }
      },
      error => {
        if (current) {
          setProblem((error as Error).message);
        }
      }
    );
    return () => {
      current = false;
    };
  }, [props.id, props.settled]);

  if (summary === null) {
    return (
      <div className="jp-Promote-sweepSummary jp-Promote-muted" data-sweep={props.id}>
        {problem ? trans.__('summary: %1', problem) : trans.__('reading the summary…')}
      </div>
    );
  }
  const metrics = Object.entries(summary.metrics ?? {});
  const spread = metrics.some(([, m]) => m.seed_std !== undefined || m.replica_std !== undefined);
  const band = Object.entries(summary.seed_band ?? {});
  const contention = summary.contention ? contentionRates(summary.contention) : null;
  return (
    <div className="jp-Promote-sweepSummary" data-sweep={props.id} aria-label={trans.__('Group summary')}>
      <div className="jp-Promote-muted jp-Promote-sweepStates">
        {stateCounts(summary.states ?? {})
          .map(([state, count]) => trans.__('%1 %2', count, state))
          .join(' · ')}
      </div>
      {problem && <div className="jp-Promote-muted">{trans.__('summary: %1', problem)}</div>}
      {metrics.length > 0 && (
        <table className="jp-Promote-metrics jp-Promote-sweepMetrics">
          <thead>
            <tr>
              <th scope="col">{trans.__('metric')}</th>
              <th scope="col">{trans.__('min')}</th>
              <th scope="col">{trans.__('max')}</th>
              <th scope="col">{trans.__('mean')}</th>
              <th scope="col">{trans.__('std')}</th>
              {spread && <th scope="col">{trans.__('seed std')}</th>}
              {spread && <th scope="col">{trans.__('replica std')}</th>}
            </tr>
          </thead>
          <tbody>
            {metrics.map(([name, m]) => (
              <tr key={name} data-metric={name}>
                <th scope="row">{name}</th>
                <td title={trans.__('task %1', m.min?.index)}>{formatValue(m.min?.value)}</td>
                <td title={trans.__('task %1', m.max?.index)}>{formatValue(m.max?.value)}</td>
                <td>{formatValue(m.mean)}</td>
                <td>{formatValue(m.std)}</td>
                {spread && <td>{formatValue(m.seed_std)}</td>}
                {spread && <td>{formatValue(m.replica_std)}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(summary.replicas ?? []).map(group => (
        <div key={group.tasks.join(',')} className="jp-Promote-sweepReplicas" data-identical={String(group.identical)}>
          {group.identical
            ? trans.__('replicas %1: identical', group.tasks.join(', '))
            : group.first_divergence === null
              ? trans.__('replicas %1: differ', group.tasks.join(', '))
              : group.first_divergence.metric === null
                ? trans.__(
                    'replicas %1: differ at step %2: %3',
                    group.tasks.join(', '),
                    formatValue(group.first_divergence.step),
                    group.first_divergence.problem ?? ''
                  )
                : trans.__(
                    'replicas %1: first differ at step %2 in %3 (%4)',
                    group.tasks.join(', '),
                    formatValue(group.first_divergence.step),
                    group.first_divergence.metric,
                    divergenceValues(group.first_divergence)
                  )}
        </div>
      ))}
      {band.length > 0 && (
        <div className="jp-Promote-sweepBand">
          {trans.__('seed band: %1', band.map(([metric, width]) => `${metric} ${formatValue(width)}`).join(', '))}
        </div>
      )}
      {contention && summary.contention && (
        <div className="jp-Promote-sweepContention">
          {trans.__(
            'steps/s alone %1 · under %2 stress %3',
            formatValue(contention.isolated),
            summary.contention.stress?.kind ?? '',
            formatValue(contention.contended)
          )}
          {contention.ratio !== null ? trans.__(' (%1× of alone)', formatValue(contention.ratio)) : ''}
        </div>
      )}
    </div>
  );
}
