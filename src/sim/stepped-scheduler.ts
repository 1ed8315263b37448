// Virtual time for replays that await promises. rxjs's VirtualTimeScheduler
// runs every scheduled action back to back in one synchronous flush, so a
// reconcile that awaits its store or writer would never see its promise
// settle. This scheduler runs actions one at a time in time order and lets
// pending promise callbacks run between them, so async code behaves as it
// would in real time, only without waiting.
import { VirtualAction, VirtualTimeScheduler } from 'rxjs';

/** Lets every queued microtask (promise callback) run. */
export function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class SteppedScheduler extends VirtualTimeScheduler {
  constructor() {
    super(VirtualAction, Infinity);
  }

  /** Virtual milliseconds of the next scheduled action, if any. */
  nextDue(): number | undefined {
    return this.actions[0]?.delay;
  }

  /**
   * Runs every action due up to `time` (virtual ms), then leaves the clock at
   * `time`. An aborted `signal` stops the replay where it is.
   */
  async advanceTo(time: number, signal?: AbortSignal): Promise<void> {
    for (;;) {
      await drainMicrotasks();
      if (signal?.aborted) return;
      const next = this.actions[0];
      if (!next || next.delay > time) break;
      this.actions.shift();
      this.frame = next.delay;
      const error = next.execute(next.state, next.delay);
      if (error) throw error;
    }
    this.frame = Math.max(this.frame, time);
  }
}
