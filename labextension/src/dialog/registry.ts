/**
 * The sections other extensions added to the Promote dialog (what IPromoteDialogExtension provides):
 * kept in rank order, each removed again when the handle its addition returned is disposed.
 */

import { DisposableDelegate, IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { IPromoteDialogExtension, IPromoteDialogSection } from '../tokens';

const DEFAULT_RANK = 100;

export class PromoteDialogExtension implements IPromoteDialogExtension {
  get sections(): readonly IPromoteDialogSection[] {
    return this._sections;
  }

  get changed(): ISignal<IPromoteDialogExtension, void> {
    return this._changed;
  }

  addSection<T>(section: IPromoteDialogSection<T>): IDisposable {
    if (this._sections.some(s => s.id === section.id)) {
      throw new Error(`jupyter-promote: a dialog section "${section.id}" was added already`);
    }
    const rank = (s: IPromoteDialogSection) => s.rank ?? DEFAULT_RANK;
    // stable: among equal ranks, the order of addition
    this._sections = [...this._sections, section].sort((a, b) => rank(a) - rank(b));
    this._changed.emit();
    return new DisposableDelegate(() => {
      this._sections = this._sections.filter(s => s !== section);
      this._changed.emit();
    });
  }

  private _sections: IPromoteDialogSection[] = [];
  private _changed = new Signal<IPromoteDialogExtension, void>(this);
}
