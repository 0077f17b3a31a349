/**
 * The environment a job ran in beside the notebook kernel's now, row by row, the rows that differ marked.
 */

import * as React from 'react';

import { IEnvironmentCard } from '../api/types';
import { useTranslation } from '../i18n';

/** The job's environment card beside the kernel's (null: not read yet). */
export function EnvironmentTable(props: {
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
