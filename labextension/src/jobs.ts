import { Event } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import {
  foldEvents,
  hasGap,
  IJobEvent,
  IJobRecord,
  IJobView,
  isFinal,
  viewOf,
  withRecord
} from './model';
import { PromoteService } from './service';
import { IJobEventsMessage, JOB_EVENTS_SCHEMA } from './tokens';

/** Something a person should hear about as it happens: a job ended, or raised an alert. */
export interface IJobNews {
  view: IJobView;
  kind: 'finished' | 'alert';
  event: IJobEvent;
}

/** Jobs not heard from on the bus are caught up this often while any of them is live (ms). */
const CATCH_UP_MS = 10000;

/**
 * Every job the server knows, kept live: seeded by `GET jobs` (so a reload loses nothing), then fed
 * by the server's event bus, with `GET jobs/{id}/events?after=SEQ` filling any gap (a reconnect, a
 * message missed) and a slow catch-up for live jobs in case the bus is down.
 */
export class JobsModel implements IDisposable {
  constructor(
    readonly service: PromoteService,
    private readonly bus: Event.IManager
  ) {
    bus.stream.connect(this._onMessage, this);
    this._timer = window.setInterval(() => void this._catchUpLive(), CATCH_UP_MS);
  }

  /** A job changed (its id), or the whole list (null). */
  get changed(): ISignal<this, string | null> {
    return this._changed;
  }

  /** A job ended or raised an alert, as it happened (never for what a reload replays). */
  get news(): ISignal<this, IJobNews> {
    return this._news;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  get views(): IJobView[] {
    return [...this._views.values()];
  }

  get(id: string): IJobView | undefined {
    return this._views.get(id);
  }

  /** Load the job list; live jobs are caught up with their events. */
  async refresh(): Promise<void> {
    const records = await this.service.jobs();
    for (const record of records) {
      const known = this._views.get(record.id);
      this._views.set(record.id, known ? withRecord(known, record) : viewOf(record));
    }
    this._changed.emit(null);
    await Promise.all(
      records.filter(r => !isFinal(r.state)).map(r => this.catchUp(r.id, false))
    );
  }

  /** Fold in every event of a job the view has not seen (what a detail view needs). */
  async catchUp(id: string, announce = false): Promise<void> {
    const view = this._views.get(id);
    if (!view) {
      return;
    }
    const events = await this.service.events(id, view.seq);
    this._apply(id, events, announce);
  }

  /** A job just submitted from this page: shown at once, before its first event. */
  async add(id: string): Promise<void> {
    if (!this._views.has(id)) {
      const record = await this.service.job(id);
      this._views.set(id, viewOf(record));
      this._changed.emit(id);
    }
    await this.catchUp(id, true);
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    window.clearInterval(this._timer);
    this.bus.stream.disconnect(this._onMessage, this);
    Signal.clearData(this);
  }

  private _onMessage(_: Event.IManager, emission: Event.Emission): void {
    if (emission.schema_id !== JOB_EVENTS_SCHEMA) {
      return;
    }
    const message = emission as unknown as IJobEventsMessage;
    void this._receive(message).catch(reason =>
      console.error(`jupyter-promote: job ${message.job}: ${reason}`)
    );
  }

  private async _receive(message: IJobEventsMessage): Promise<void> {
    const view = this._views.get(message.job);
    if (!view) {
      // a job started elsewhere (the CLI against this server, another tab, a rerun): fetch it whole
      await this.add(message.job);
      return;
    }
    if (hasGap(view, message.first_seq)) {
      await this.catchUp(message.job, true);
      return;
    }
    this._apply(message.job, JSON.parse(message.events) as IJobEvent[], true);
  }

  private _apply(id: string, events: IJobEvent[], announce: boolean): void {
    const before = this._views.get(id);
    if (!before || events.length === 0) {
      return;
    }
    const after = foldEvents(before, events);
    if (after === before) {
      return;
    }
    this._views.set(id, after);
    this._changed.emit(id);
    if (!announce) {
      return;
    }
    for (const event of events) {
      if (event.seq <= before.seq) {
        continue;
      }
      if (event.type === 'alert') {
        this._news.emit({ view: after, kind: 'alert', event });
      } else if (event.type === 'status' && isFinal(event.state) && !isFinal(before.state)) {
        this._news.emit({ view: after, kind: 'finished', event });
      }
    }
  }

  private async _catchUpLive(): Promise<void> {
    const live = this.views.filter(v => !isFinal(v.state));
    await Promise.all(live.map(v => this.catchUp(v.id, true).catch(() => undefined)));
  }

  private _views = new Map<string, IJobView>();
  private _changed = new Signal<this, string | null>(this);
  private _news = new Signal<this, IJobNews>(this);
  private _disposed = false;
  private _timer: number;
}

export type { IJobRecord };
