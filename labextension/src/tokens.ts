/**
 * The extension's tokens: what other JupyterLab extensions may ask for. IPromoteDialogExtension adds a
 * section to the "Promote to cluster" dialog (as jupyter-scheduler's advanced options do): its view,
 * and what its value adds to the `POST jobs` request.
 */

import { IDisposable } from '@lumino/disposable';
import { ISignal } from '@lumino/signaling';
import { Token } from '@lumino/coreutils';
import type * as React from 'react';

import type { IFreezePreview, IPromoteRequest } from './api/types';
import type { IPromoteForm } from './form/form';

/** What a section's view is given. */
export interface IPromoteSectionProps<T = any> {
  /** The section's value (its `initial` in a new dialog). */
  value: T;
  /** Replace the section's value (the dialog keeps it, and gives it back when it opens again). */
  onChange: (value: T) => void;
  /** The rest of the form, read only: the target chosen, the resources asked for, ... */
  form: Readonly<IPromoteForm>;
  /** What the server said of the notebook (its parameters, kernels, environment), null until it has. */
  preview: IFreezePreview | null;
  /** The dialog's errors by field: a FieldError the section's `contribute` raised shows under its own field. */
  errors: Record<string, string>;
}

/** A section of the Promote dialog another extension adds. */
export interface IPromoteDialogSection<T = any> {
  /** Unique among the sections; the form keeps the section's value under `sections[id]`. */
  id: string;
  /** Where it goes among the added sections (lower first; default 100); they follow the built-in ones. */
  rank?: number;
  /** Its value in a new form. */
  initial: T;
  /** Its view: a React component (a fieldset, say), rendered inside the dialog's form. */
  component: React.ComponentType<IPromoteSectionProps<T>>;
  /**
   * The request with what the section's value asks for (a new object, or `request` changed); raise a
   * FieldError (form/parse) naming a field to have the dialog show it there and not submit.
   */
  contribute: (value: T, request: IPromoteRequest) => IPromoteRequest;
}

/** The sections added to the Promote dialog. */
export interface IPromoteDialogExtension {
  /** Add a section; disposing the result removes it again. An id already added is an error. */
  addSection<T>(section: IPromoteDialogSection<T>): IDisposable;
  /** The sections, in rank order (then in the order they were added). */
  readonly sections: readonly IPromoteDialogSection[];
  /** Emitted when a section is added or removed. */
  readonly changed: ISignal<IPromoteDialogExtension, void>;
}

export const IPromoteDialogExtension = new Token<IPromoteDialogExtension>(
  'jupyter-promote:IPromoteDialogExtension',
  'Adds sections to the "Promote to cluster" dialog: a view, and what its value adds to the request.'
);
