/**
 * The freeze preview in the Promote dialog: requested again when the kernel or the GPUs change,
 * its pre-flight findings, and its environment card.
 */

import * as React from 'react';

import { formFieldOf } from './form/fields';
import { useTranslation } from './i18n';
import { PromoteRequestError, PromoteService } from './api/service';
import { IFreezePreview } from './api/types';

/** How long the GPU count must stay put before the preview is asked for again (it is typed digit by digit). */
const GPUS_SETTLE_MS = 600;

export interface IPreviewState {
  preview: IFreezePreview | null;
  /** The notebook's own kernelspec: `preview.kernel` of a preview asked for without a kernel. */
  own: string | null;
  /** A preview for another kernel or GPU count is on its way (the one shown is the previous). */
  loading: boolean;
  /** Why the last preview could not be made, or null. */
  problem: string | null;
  /** The form field that problem concerns (the server error's `field`, as `formFieldOf` maps it); '' = none. */
  problemField: string;
}

/**
 * The preview of `kernel` ('' = the notebook's own) for `gpus` on `target` (its pre-flight findings are that
 * target's: `local` carries the whole environment), asked for whenever one changes; a late answer to an
 * earlier question is dropped. `initial` is a preview the dialog already has (its
 * previous opening), taken as the answer for the first kernel and GPU count.
 */
export function usePreview(
  service: PromoteService,
  notebook: string,
  kernel: string,
  gpus: number | undefined,
  target: string,
  initial: { preview: IFreezePreview | null; own: string | null }
): IPreviewState {
  const trans = useTranslation();
  const [state, setState] = React.useState<IPreviewState>({
    ...initial,
    loading: initial.preview === null,
    problem: null,
    problemField: ''
  });
  const asked = React.useRef<{ kernel: string; gpus: number | undefined; target: string } | null>(
    initial.preview === null ? null : { kernel, gpus, target }
  );
  const latest = React.useRef(0);
  React.useEffect(() => {
    const previous = asked.current;
    if (previous !== null && previous.kernel === kernel && previous.gpus === gpus && previous.target === target) {
      return;
    }
    asked.current = { kernel, gpus, target };
    const ask = latest.current + 1;
    latest.current = ask;
    setState(s => ({ ...s, loading: true }));
    const timer = window.setTimeout(
      () => {
        service.freeze(notebook, kernel || undefined, gpus, target || undefined).then(
          found => {
            if (latest.current === ask) {
              setState(s => ({
                preview: found,
                own: kernel ? s.own : found.kernel,
                loading: false,
                problem: null,
                problemField: ''
              }));
            }
          },
          error => {
            if (latest.current === ask) {
              setState(s => ({
                ...s,
                loading: false,
                problem: trans.__('environment: %1', (error as Error).message),
                problemField: error instanceof PromoteRequestError ? formFieldOf(error.field) : ''
              }));
            }
          }
        );
      },
      previous !== null && previous.kernel === kernel && previous.target === target ? GPUS_SETTLE_MS : 0
    );
    return () => window.clearTimeout(timer); // a GPU count typed over before it settled is never asked for
  }, [kernel, gpus, target]);
  return state;
}

/** The pre-flight findings: what will differ on the cluster, one line each; they never block the Promote button. */
export function PreflightChecks(props: { preview: IFreezePreview | null; loading: boolean }): JSX.Element | null {
  const trans = useTranslation();
  const { preview, loading } = props;
  const findings = preview?.check?.findings;
  if (preview !== null && findings === undefined) {
    return null; // a server that makes no pre-flight checks
  }
  if (findings === undefined || findings.length === 0) {
    return (
      <div
        className="jp-Promote-checks jp-Promote-checks-empty jp-Promote-muted"
        role="status"
        aria-label={trans.__('Pre-flight checks')}
      >
        {preview === null || loading ? trans.__('pre-flight: checking…') : trans.__('pre-flight: nothing to report')}
      </div>
    );
  }
  return (
    <section className="jp-Promote-checks" role="status" aria-label={trans.__('Pre-flight checks')} aria-busy={loading}>
      <div className="jp-Promote-checksTitle">{trans.__('What will differ on the cluster (%1)', findings.length)}</div>
      <ul>
        {findings.map((finding, i) => (
          <li key={i} data-kind={finding.kind} data-cell={finding.cell ?? ''}>
            {finding.message}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The frozen environment a person compares at a glance, and the image it needs. */
export function EnvironmentCard(props: { preview: IFreezePreview | null; loading: boolean }): JSX.Element {
  const trans = useTranslation();
  const { preview } = props;
  const freezing = trans.__("freezing the kernel's environment…");
  if (preview === null) {
    return <div className="jp-Promote-muted">{freezing}</div>;
  }
  return (
    <>
      {props.loading && <div className="jp-Promote-muted">{freezing}</div>}
      <dl aria-busy={props.loading} className={props.loading ? 'jp-Promote-stale' : ''}>
        <dt>{trans.__('Python')}</dt>
        <dd>{preview.environment.python}</dd>
        <dt>{trans.__('torch')}</dt>
        <dd>
          {preview.environment.torch ?? trans.__('not installed')}
          {preview.environment.cuda ? trans.__(' · CUDA %1', preview.environment.cuda) : ''}
        </dd>
        {Object.entries(preview.environment.key_packages)
          .filter(([name]) => name !== 'torch')
          .map(([name, version]) => (
            <React.Fragment key={name}>
              <dt>{name}</dt>
              <dd>{version}</dd>
            </React.Fragment>
          ))}
        <dt>{trans.__('packages')}</dt>
        <dd>{preview.environment.packages}</dd>
        <dt>{trans.__('image')}</dt>
        <dd className="jp-Promote-image">
          {preview.image
            ? preview.image.exists
              ? trans.__('%1 (exists)', preview.image.tag)
              : trans.__('%1 (will be built)', preview.image.tag)
            : preview.image_error
              ? trans.__('none needed here (%1)', preview.image_error)
              : trans.__('none needed here')}
        </dd>
      </dl>
    </>
  );
}
