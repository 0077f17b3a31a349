import * as React from 'react';

import { artifactName, formatSize } from '../artifacts';
import { useTranslation } from '../i18n';
import { IArtifact } from '../api/jobs';

/**
 * The files a job wrote in its working directory, each a download link. The link's address is the
 * artifact's; a click fetches it with the server connection's credentials (`onDownload`), so it
 * works whether the server authenticates with a token or a cookie.
 */
export function Artifacts(props: {
  artifacts: IArtifact[] | null;
  href: (path: string) => string;
  onDownload: (artifact: IArtifact) => Promise<void>;
}): JSX.Element {
  const trans = useTranslation();
  const [busy, setBusy] = React.useState<string | null>(null);
  const download = async (artifact: IArtifact) => {
    setBusy(artifact.path);
    try {
      await props.onDownload(artifact);
    } finally {
      setBusy(null);
    }
  };
  return (
    <section aria-label={trans.__('Artifacts')} className="jp-Promote-artifacts" data-testid="jp-Promote-artifacts">
      <h4>{trans.__('Artifacts')}</h4>
      {props.artifacts === null ? (
        <div className="jp-Promote-muted">…</div>
      ) : props.artifacts.length === 0 ? (
        <div className="jp-Promote-muted">{trans.__('No artifacts')}</div>
      ) : (
        <ul>
          {props.artifacts.map(artifact => (
            <li key={artifact.path} data-path={artifact.path}>
              <a
                href={props.href(artifact.path)}
                download={artifactName(artifact.path)}
                aria-label={trans.__('Download %1', artifact.path)}
                aria-busy={busy === artifact.path}
                onClick={event => {
                  event.preventDefault();
                  if (busy !== artifact.path) {
                    void download(artifact);
                  }
                }}
              >
                {artifact.path}
              </a>
              <span className="jp-Promote-muted">{formatSize(artifact.size)}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
