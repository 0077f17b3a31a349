import * as React from 'react';
import uPlot from 'uplot';

import { chartOrigin, ELAPSED_INCREMENTS, elapsedRange, elapsedTickLabels, formatElapsed, toElapsed } from '../elapsed';
import { useTranslation } from '../i18n';
import { IPoint } from '../job/view';

export interface IChartSeries {
  label: string;
  points: IPoint[];
}

const COLOURS = [
  '--jp-brand-color1',
  '--jp-warn-color1',
  '--jp-success-color1',
  '--jp-error-color1',
  '--jp-info-color1'
];

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
}

/** Align series on one x axis (uPlot's data layout), filling gaps with null. */
function aligned(series: IChartSeries[]): uPlot.AlignedData {
  const times = Array.from(new Set(series.flatMap(s => s.points.map(p => p.t)))).sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const columns = series.map(s => {
    const column: (number | null)[] = new Array(times.length).fill(null);
    for (const p of s.points) {
      column[index.get(p.t)!] = p.v;
    }
    return column;
  });
  return [times, ...columns] as uPlot.AlignedData;
}

/** The name of JupyterLab's theme, following a switch (the body's data-jp-theme-name). */
function useThemeName(): string | undefined {
  const [name, setName] = React.useState(document.body.dataset.jpThemeName);
  React.useEffect(() => {
    const observer = new MutationObserver(() => setName(document.body.dataset.jpThemeName));
    observer.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-name'] });
    return () => observer.disconnect();
  }, []);
  return name;
}

/**
 * A small chart of series over the time elapsed since the job started (uPlot: 50 kB, canvas), themed
 * from JupyterLab's CSS variables. The x axis is seconds since `startedAt` (the first point's time
 * when the job has none), its ticks written in s, min, h or d as its span calls for: never dates.
 */
export function Chart(props: {
  title: string;
  series: IChartSeries[];
  /** The job's start, unix seconds (its record's `started_at`). */
  startedAt?: number | null;
  unit?: string;
  scale?: number;
}): JSX.Element {
  const trans = useTranslation();
  const host = React.useRef<HTMLDivElement>(null);
  const theme = useThemeName();
  const plot = React.useRef<uPlot | null>(null);
  const labels = props.series.map(s => s.label).join('\u0000');
  const scale = props.scale ?? 1;
  const origin = chartOrigin(
    props.startedAt,
    props.series.map(s => s.points)
  );
  const data = aligned(
    props.series.map(s => ({
      label: s.label,
      points: toElapsed(s.points, origin).map(p => ({ t: p.t, v: p.v / scale }))
    }))
  );

  React.useEffect(() => {
    if (!host.current) {
      return;
    }
    const ink = cssVar('--jp-ui-font-color2', '#666');
    const grid = cssVar('--jp-border-color2', '#ddd');
    const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } };
    const options: uPlot.Options = {
      width: Math.max(200, (host.current.clientWidth || 280) - 8),
      height: 120,
      legend: { show: props.series.length > 1 },
      cursor: { drag: { x: false, y: false } },
      // x: seconds since the job started, not a unix time (uPlot's default would label it with dates)
      scales: { x: { time: false, range: (_u, min, max) => elapsedRange(min, max) } },
      axes: [
        {
          ...axis,
          incrs: ELAPSED_INCREMENTS as number[],
          space: 40,
          size: 32, // one line of labels: the rest of the height is the plot's
          values: (u, ticks) => {
            const text = elapsedTickLabels(ticks, (u.scales.x.max ?? 0) - (u.scales.x.min ?? 0));
            // the canvas's tick labels, readable outside it (the UI tests read them)
            host.current?.setAttribute('data-x-ticks', text.join(' | '));
            return text;
          }
        },
        { ...axis, size: 45, space: 20 } // a few values even on a short plot
      ],
      series: [
        { label: trans.__('elapsed'), value: (_u, t) => (t === null ? '' : formatElapsed(t)) },
        ...props.series.map((s, i) => ({
          label: s.label,
          stroke: cssVar(COLOURS[i % COLOURS.length], '#1976d2'),
          width: 1.5,
          spanGaps: true,
          // a dot per sample while they are few and far apart (one sample is a dot, not nothing)
          points: { size: 5, space: 10 }
        }))
      ]
    };
    plot.current = new uPlot(options, data, host.current);
    const resize = new ResizeObserver(() => {
      if (host.current && plot.current) {
        plot.current.setSize({ width: Math.max(200, host.current.clientWidth - 8), height: 120 });
      }
    });
    resize.observe(host.current);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [labels, theme]); // a theme switch redraws with the new theme's colours

  React.useEffect(() => {
    plot.current?.setData(data);
  });

  const last = props.series.map(s => s.points[s.points.length - 1]).filter(p => p !== undefined);
  return (
    <figure className="jp-Promote-chart" aria-label={props.title}>
      <figcaption>
        {props.title}
        {last.length === 1 && (
          <span className="jp-Promote-muted">
            {' '}
            {(last[0].v / scale).toPrecision(4)}
            {props.unit ? ` ${props.unit}` : ''}
          </span>
        )}
      </figcaption>
      <div ref={host} />
    </figure>
  );
}
