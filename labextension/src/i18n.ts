/**
 * The extension's strings go through JupyterLab's translator (`trans.__`), in the gettext domain of
 * its Python package, so that a language pack can translate them. Without a translator they read as
 * written.
 */

import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

/** The translation bundle of the React views below a provider (the sidebar, the Promote dialog). */
export const TranslationContext: React.Context<TranslationBundle> = React.createContext<TranslationBundle>(
  nullTranslator.load('jupyter_promote')
);

/** The translation bundle a view renders with. */
export function useTranslation(): TranslationBundle {
  return React.useContext(TranslationContext);
}
