import * as React from 'react';
import uPlot from 'uplot';

import { IPoint } from '../model';

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

/** Align series on one time axis (uPlot's data layout), filling gaps with null. */
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

/** A small time-series chart (uPlot: 50 kB, canvas), themed from JupyterLab's CSS variables. */
export function Chart(props: { title: string; series: IChartSeries[]; unit?: string; scale?: number }): JSX.Element {
  const host = React.useRef<HTMLDivElement>(null);
  const theme = useThemeName();
  const plot = React.useRef<uPlot | null>(null);
  const labels = props.series.map(s => s.label).join('\u0000');
  const scale = props.scale ?? 1;
  const data = aligned(
    props.series.map(s => ({ label: s.label, points: s.points.map(p => ({ t: p.t, v: p.v / scale })) }))
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
      axes: [axis, { ...axis, size: 45 }],
      series: [
        {},
        ...props.series.map((s, i) => ({
          label: s.label,
          stroke: cssVar(COLOURS[i % COLOURS.length], '#1976d2'),
          width: 1.5,
          spanGaps: true
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
