/**
 * The "Promote to cluster" dialog: the form (./PromoteForm) in a JupyterLab dialog, opened again with
 * the previous choice and the server's errors after a refused request.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { PromoteService } from '../api/service';
import { emptyForm } from '../form/form';
import { emptySchedule } from '../form/schedule';
import { TranslationContext } from '../i18n';
import { IPromoteDialogSection } from '../tokens';
import { IPromoteChoice, IPromoteFormProps, PromoteForm } from './PromoteForm';

export type { IPromoteChoice };

class PromoteBody extends ReactWidget implements Dialog.IBodyWidget<IPromoteChoice> {
  constructor(
    private readonly props: Omit<IPromoteFormProps, 'onChange'>,
    private readonly trans: TranslationBundle
  ) {
    super();
    this.addClass('jp-Promote-dialog');
    this._choice = props.initial;
  }

  getValue(): IPromoteChoice {
    return this._choice;
  }

  render(): JSX.Element {
    return (
      <TranslationContext.Provider value={this.trans}>
        <PromoteForm {...this.props} onChange={choice => (this._choice = choice)} />
      </TranslationContext.Provider>
    );
  }

  private _choice: IPromoteChoice;
}

/** Show the dialog, filled with the previous choice if any; resolves to the person's choice, or null when they cancel. */
export async function askPromote(
  service: PromoteService,
  trans: TranslationBundle,
  notebook: string,
  previous: IPromoteChoice | null,
  defaultTarget: string,
  errors: Record<string, string> = {},
  sections: readonly IPromoteDialogSection[] = []
): Promise<IPromoteChoice | null> {
  const body = new PromoteBody(
    {
      service,
      notebook,
      initial: previous ?? {
        form: emptyForm(defaultTarget, sections),
        preview: null,
        ownKernel: null,
        schedule: emptySchedule()
      },
      errors,
      sections
    },
    trans
  );
  const result = await showDialog({
    title: trans.__('Promote %1 to cluster', notebook.split('/').pop() ?? notebook),
    body,
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: trans.__('Promote'), ariaLabel: trans.__('Promote') })],
    focusNodeSelector: 'select'
  });
  return result.button.accept ? result.value : null;
}
