import { Event } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { IJobEvent, IJobRecord } from './api/jobs';
import { JOBS_PAGE, PromoteService } from './api/service';
import { IJobEventsMessage, JOB_EVENTS_SCHEMA } from './api/types';
import { foldEvents, hasGap } from './job/fold';
import { Gate } from './job/gate';
import { problem } from './job/validate';
import { IJobView, isFinal, viewOf, withRecord } from './job/view';

/** Something a person should hear about as it happens: a job ended, or raised an alert. */
export interface IJobNews {
  view: IJobView;
  kind: 'finished' | 'alert';
  event: IJobEvent;
}

/** Jobs not heard from on the bus are caught up this often while any of them is live (ms). */
export const CATCH_UP_MS = 10000;
/** The server's page size of `GET jobs/{id}/events`: a full page means there may be more. */
const EVENTS_PAGE = 10000;
/** Requests for jobs' events (and records) in flight at once: a load of hundreds of live jobs waits its turn. */
export const CATCH_UP_AT_ONCE = 8;

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
    this._timer = setInterval(() => void this._catchUpLive(), CATCH_UP_MS);
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

  /** How many of the server's jobs, older than every one loaded, are not loaded (`loadOlder()` loads them). */
  get older(): number {
    return Math.max(0, this._total - this._pageEnd);
  }

  /**
   * Load the newest page of jobs; live jobs are then caught up with their events, a few at a time
   * (history: nothing is announced). Messages from the bus are taken as soon as the page is in: one for a
   * job not caught up yet is a gap, which catches that job up first.
   */
  async refresh(): Promise<void> {
    const records = await this._loadPage(0);
    this._ready = true;
    await this._catchUpAll(records);
  }

  /** Load the next page of older jobs (the list's "Show older jobs"); its live jobs are caught up. */
  async loadOlder(): Promise<void> {
    if (this._loadingOlder) {
      await this._loadingOlder; // one page at a time: a second click waits for the page under way
      return;
    }
    this._loadingOlder = this._loadPage(this._pageEnd);
    this._changed.emit(null);
    let records: IJobRecord[];
    try {
      records = await this._loadingOlder;
    } finally {
      this._loadingOlder = null;
      this._changed.emit(null); // the button again
    }
    await this._catchUpAll(records);
  }

  /** Whether a page of older jobs is being loaded. */
  get loadingOlder(): boolean {
    return this._loadingOlder !== null;
  }

  /**
   * Fold in every event of a job the view has not seen (what a detail view needs), page by page. Only
   * events past what was already known when the page loaded are announced. A `background` catch-up (a
   * load, the slow catch-up of quiet jobs) waits behind those a person asked for.
   */
  async catchUp(id: string, announce = false, background = false): Promise<void> {
    for (;;) {
      const view = this._views.get(id);
      if (!view) {
        return;
      }
      // the seq when its turn comes: an urgent catch-up of the same job may have gone before this one
      const after = (): number => this._views.get(id)?.seq ?? view.seq;
      // a job forgotten (deleted) while it waited for its turn is not asked for
      const events = await this._gate.run(
        () => (this._views.has(id) ? this.service.events(id, after()) : Promise.resolve([])),
        !background
      );
      this._apply(id, events, announce);
      if (events.length < EVENTS_PAGE) {
        break;
      }
    }
    const view = this._views.get(id);
    if (view && isFinal(view.state) && view.record.parity === null) {
      await this._refreshRecord(id, background); // the verdict is stored after the final event: take the record again
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
      // the pages after it shift by one: the next page may then repeat a job (merged), never skip one
      this._pageEnd = Math.max(0, this._pageEnd - 1);
      this._total = Math.max(0, this._total - 1);
      this._changed.emit(null);
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    clearInterval(this._timer);
    this.bus.stream.disconnect(this._onMessage, this);
    Signal.clearData(this);
  }

  /** The page of jobs from `offset`, in the list at once; its records. */
  private async _loadPage(offset: number): Promise<IJobRecord[]> {
    const page = await this.service.jobs(JOBS_PAGE, offset);
    for (const record of page.jobs) {
      const known = this._views.get(record.id);
      this._views.set(record.id, known ? withRecord(known, record) : viewOf(record));
    }
    // jobs created since the first page shift the pages: the next page may repeat a few, never miss one
    this._pageEnd = Math.max(this._pageEnd, page.offset + page.jobs.length);
    this._total = page.total;
    this._changed.emit(null);
    return page.jobs;
  }

  /** Catch up the live ones of `records`, in the background (at most CATCH_UP_AT_ONCE requests at once). */
  private async _catchUpAll(records: IJobRecord[]): Promise<void> {
    // one job that cannot be caught up now (deleted meanwhile, a server error) is tried again later: the list
    // itself loaded
    const live = records.filter(r => !isFinal(r.state));
    await Promise.all(
      live.map(r =>
        this.catchUp(r.id, false, true).catch(reason =>
          console.warn(`jupyter-promote: job ${r.id}: not caught up now: ${reason}`)
        )
      )
    );
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

  private async _refreshRecord(id: string, background = false): Promise<void> {
    const record = await this._gate.run(() => this.service.job(id), !background).catch(() => null);
    const view = this._views.get(id);
    if (record && view) {
      this._views.set(id, withRecord(view, record));
      this._changed.emit(id);
    }
  }

  /** Live jobs not heard from for a while (the bus down, or a job ended by the server's reconciliation). */
  private async _catchUpLive(): Promise<void> {
    if (this._catchingUpLive) {
      return; // the last round is still under way (a slow server): no second round behind it
    }
    this._catchingUpLive = true;
    const quiet = this.views.filter(
      v => !isFinal(v.state) && Date.now() - (this._heardAt.get(v.id) ?? 0) >= CATCH_UP_MS
    );
    await Promise.all(
      quiet.map(async v => {
        await this.catchUp(v.id, true, true).catch(() => undefined);
        if (this._views.get(v.id)?.seq === v.seq) {
          await this._refreshRecord(v.id, true); // no new event: the record may have moved on without one
        }
      })
    ).finally(() => (this._catchingUpLive = false));
  }

  private _views = new Map<string, IJobView>();
  private _changed = new Signal<this, string | null>(this);
  private _news = new Signal<this, IJobNews>(this);
  private _disposed = false;
  private _timer: ReturnType<typeof setInterval>;
  private _ready = false;
  private _adding = new Map<string, Promise<void>>();
  private _heardAt = new Map<string, number>();
  private _gate = new Gate(CATCH_UP_AT_ONCE);
  private _catchingUpLive = false;
  /** The server's count of jobs at the last page, and where the pages loaded so far end. */
  private _total = 0;
  private _pageEnd = 0;
  private _loadingOlder: Promise<IJobRecord[]> | null = null;
  /** Seconds since the epoch when this page loaded: older events are history, never announced. */
  private _loadedAt = Date.now() / 1000;
}

export type { IJobRecord };
