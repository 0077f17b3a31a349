import { Event } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { IJobEvent, IJobRecord } from './api/jobs';
import { PromoteService } from './api/service';
import { IJobEventsMessage, JOB_EVENTS_SCHEMA } from './api/types';
import { foldEvents, hasGap } from './job/fold';
import { problem } from './job/validate';
import { IJobView, isFinal, viewOf, withRecord } from './job/view';

/** Something a person should hear about as it happens: a job ended, or raised an alert. */
export interface IJobNews {
  view: IJobView;
  kind: 'finished' | 'alert';
  event: IJobEvent;
}

/** Jobs not heard from on the bus are caught up this often while any of them is live (ms). */
const CATCH_UP_MS = 10000;
/** The server's page size of `GET jobs/{id}/events`: a full page means there may be more. */
const EVENTS_PAGE = 10000;

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

  /** Load the job list; live jobs are caught up with their events (history: nothing is announced). */
  async refresh(): Promise<void> {
    const records = await this.service.jobs();
    for (const record of records) {
      const known = this._views.get(record.id);
      this._views.set(record.id, known ? withRecord(known, record) : viewOf(record));
    }
    this._changed.emit(null);
    await Promise.all(records.filter(r => !isFinal(r.state)).map(r => this.catchUp(r.id, false)));
    this._ready = true;
  }

  /**
   * Fold in every event of a job the view has not seen (what a detail view needs), page by page. Only
   * events past what was already known when the page loaded are announced.
   */
  async catchUp(id: string, announce = false): Promise<void> {
    for (;;) {
      const view = this._views.get(id);
      if (!view) {
        return;
      }
      const events = await this.service.events(id, view.seq);
      this._apply(id, events, announce);
      if (events.length < EVENTS_PAGE) {
        break;
      }
    }
    const view = this._views.get(id);
    if (view && isFinal(view.state) && view.record.parity === null) {
      await this._refreshRecord(id); // the verdict is stored after the final event: take the record again
    }
  }

  /** A job just submitted from this page (or first heard of on the bus): shown at once, then caught up. */
  add(id: string): Promise<void> {
    let adding = this._adding.get(id);
    if (!adding) {
      adding = (async () => {
        if (!this._views.has(id)) {
          const record = await this.service.job(id);
          if (!this._views.has(id)) {
            this._views.set(id, viewOf(record));
            this._changed.emit(id);
          }
        }
        await this.catchUp(id, true);
      })().finally(() => this._adding.delete(id));
      this._adding.set(id, adding);
    }
    return adding;
  }

  /** Forget a job the server no longer has (deleted): it leaves the list at once. */
  forget(id: string): void {
    if (this._views.delete(id)) {
      this._heardAt.delete(id);
      this._changed.emit(null);
    }
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
    if (emission.schema_id !== JOB_EVENTS_SCHEMA || !this._ready) {
      return; // before the first refresh, the refresh itself catches up
    }
    const message = emission as unknown as IJobEventsMessage;
    void this._receive(message).catch(reason => console.error(`jupyter-promote: job ${message.job}: ${reason}`));
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
    this._heardAt.set(id, Date.now());
    this._changed.emit(id);
    if (!announce) {
      return;
    }
    let finished = isFinal(before.state);
    for (const event of events) {
      if (problem(event) !== null || event.seq <= before.seq || event.ts < this._loadedAt) {
        continue; // not foldable, a replay, or history from before this page loaded
      }
      if (event.type === 'alert') {
        this._news.emit({ view: after, kind: 'alert', event });
      } else if (event.type === 'status' && isFinal(event.state) && !finished) {
        finished = true;
        this._news.emit({ view: after, kind: 'finished', event });
      }
    }
  }

  private async _refreshRecord(id: string): Promise<void> {
    const record = await this.service.job(id).catch(() => null);
    const view = this._views.get(id);
    if (record && view) {
      this._views.set(id, withRecord(view, record));
      this._changed.emit(id);
    }
  }

  /** Live jobs not heard from for a while (the bus down, or a job ended by the server's reconciliation). */
  private async _catchUpLive(): Promise<void> {
    const quiet = this.views.filter(
      v => !isFinal(v.state) && Date.now() - (this._heardAt.get(v.id) ?? 0) >= CATCH_UP_MS
    );
    await Promise.all(
      quiet.map(async v => {
        await this.catchUp(v.id, true).catch(() => undefined);
        if (this._views.get(v.id)?.seq === v.seq) {
          await this._refreshRecord(v.id); // no new event: the record may have moved on without one
        }
      })
    );
  }

  private _views = new Map<string, IJobView>();
  private _changed = new Signal<this, string | null>(this);
  private _news = new Signal<this, IJobNews>(this);
  private _disposed = false;
  private _timer: number;
  private _ready = false;
  private _adding = new Map<string, Promise<void>>();
  private _heardAt = new Map<string, number>();
  /** Seconds since the epoch when this page loaded: older events are history, never announced. */
  private _loadedAt = Date.now() / 1000;
}

export type { IJobRecord };
