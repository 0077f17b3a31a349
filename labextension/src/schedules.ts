import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { IJobRecord } from './api/jobs';
import { PromoteService } from './api/service';
import { ISchedule } from './api/types';
import { CATCH_UP_MS } from './jobs';

/** The runs of an expanded schedule shown in the sidebar: its newest jobs. */
export const SCHEDULE_RUNS = 20;

/**
 * This user's schedules as the sidebar shows them: `GET schedules`, and the runs (`GET jobs?schedule=ID`) of
 * those expanded, read again on the job list's catch-up cadence while someone looks (`follow()`), and after
 * each action (pause, resume, run now, delete). A refused action or load is said in `problem`.
 */
export class SchedulesModel implements IDisposable {
  constructor(
    readonly service: PromoteService,
    private readonly everyMs = CATCH_UP_MS
  ) {}

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The schedules, as the server listed them; null before the first load. */
  get schedules(): ISchedule[] | null {
    return this._schedules;
  }

  /** The last load or action that failed, said in one line; null once one succeeds. */
  get problem(): string | null {
    return this._problem;
  }

  /** The newest runs of a schedule, once loaded (expanded schedules only). */
  runs(id: string): IJobRecord[] | undefined {
    return this._runs.get(id);
  }

  isExpanded(id: string): boolean {
    return this._expanded.has(id);
  }

  /** Expand a schedule (its runs are loaded) or collapse it. */
  async toggle(id: string): Promise<void> {
    if (this._expanded.delete(id)) {
      this._changed.emit();
      return;
    }
    this._expanded.add(id);
    this._changed.emit();
    await this._act(() => this._loadRuns(id));
  }

  /** Load the schedules and the runs of those expanded. */
  refresh(): Promise<void> {
    return this._act(async () => {
      this._schedules = await this.service.schedules();
      const known = new Set(this._schedules.map(s => s.id));
      for (const id of [...this._expanded]) {
        if (!known.has(id)) {
          this._expanded.delete(id);
          this._runs.delete(id);
        }
      }
      await Promise.all([...this._expanded].map(id => this._loadRuns(id)));
    });
  }

  /** Refresh now and then every `everyMs` until the returned handle is disposed (while the view is shown). */
  follow(): IDisposable {
    void this.refresh();
    const timer = setInterval(() => void this.refresh(), this.everyMs);
    let disposed = false;
    return {
      get isDisposed() {
        return disposed;
      },
      dispose: () => {
        disposed = true;
        clearInterval(timer);
      }
    };
  }

  pause(id: string): Promise<void> {
    return this._act(async () => this._replace(await this.service.updateSchedule(id, { paused: true })));
  }

  resume(id: string): Promise<void> {
    return this._act(async () => this._replace(await this.service.updateSchedule(id, { paused: false })));
  }

  /** Fire the schedule now: the job's id (null when refused), its runs shown. */
  async runNow(id: string): Promise<string | null> {
    let job: string | null = null;
    await this._act(async () => {
      job = (await this.service.runSchedule(id)).id;
      this._expanded.add(id);
      await this._loadRuns(id);
    });
    return job;
  }

  /** Delete the schedule (the jobs it fired stay in the job list). */
  remove(id: string): Promise<void> {
    return this._act(async () => {
      await this.service.deleteSchedule(id);
      this._schedules = (this._schedules ?? []).filter(s => s.id !== id);
      this._expanded.delete(id);
      this._runs.delete(id);
    });
  }

  dispose(): void {
    this._disposed = true;
    Signal.clearData(this);
  }

  private _replace(schedule: ISchedule): void {
    this._schedules = (this._schedules ?? []).map(s => (s.id === schedule.id ? schedule : s));
  }

  private async _loadRuns(id: string): Promise<void> {
    const page = await this.service.scheduleJobs(id, SCHEDULE_RUNS);
    if (this._expanded.has(id)) {
      this._runs.set(id, page.jobs);
    }
  }

  private async _act(action: () => Promise<void>): Promise<void> {
    try {
      await action();
      this._problem = null;
    } catch (error) {
      this._problem = (error as Error).message;
    }
    if (!this._disposed) {
      this._changed.emit();
    }
  }

  private _schedules: ISchedule[] | null = null;
  private _runs = new Map<string, IJobRecord[]>();
  private _expanded = new Set<string>();
  private _problem: string | null = null;
  private _disposed = false;
  private _changed = new Signal<this, void>(this);
}
