/**
 * A bound on requests in flight: at most `limit` tasks run at once, the others wait their turn in the
 * order they came, except urgent ones (what a person is looking at), which go before the waiting others.
 * The sidebar catches up hundreds of jobs at a load; without a bound, each of them is a request at once.
 */
export class Gate {
  constructor(readonly limit: number) {}

  /** Tasks running now. */
  get running(): number {
    return this._running;
  }

  /** Tasks waiting for a place. */
  get waiting(): number {
    return this._waiting.length;
  }

  /** Run `task` once fewer than `limit` others run; `urgent` puts it before every waiting task. */
  run<T>(task: () => Promise<T>, urgent = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = (): void => {
        this._running += 1;
        let done: Promise<T>;
        try {
          done = task();
        } catch (reason) {
          done = Promise.reject(reason);
        }
        done.then(resolve, reject).finally(() => {
          this._running -= 1;
          this._waiting.shift()?.();
        });
      };
      if (this._running < this.limit) {
        start();
      } else if (urgent) {
        this._waiting.unshift(start);
      } else {
        this._waiting.push(start);
      }
    });
  }

  private _running = 0;
  private _waiting: (() => void)[] = [];
}
