// Virtual time for replays that await promises. rxjs's VirtualTimeScheduler
// runs every scheduled action back to back in one synchronous flush, so a
// reconcile that awaits its store or writer would never see its promise
// settle. This scheduler runs actions one at a time in time order and lets
// pending promise callbacks run between them, so async code behaves as it
// would in real time, only without waiting.
import { Subscription, VirtualAction, VirtualTimeScheduler } from 'rxjs';

/** Lets every queued microtask (promise callback) run. */
export function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A queued action as rxjs keeps it: its due time and its index (protected in the typings). */
interface Queued {
  delay: number;
  index: number;
}

/** Orders actions as rxjs's VirtualAction.sortActions does: by due time, then by index. */
function before(a: Queued, b: Queued): boolean {
  return a.delay < b.delay || (a.delay === b.delay && a.index <= b.index);
}

/**
 * rxjs's VirtualAction, rescheduled from its own work (a periodic timer),
 * makes a new action and adds it to itself: a week of one-minute ticks is a
 * chain of 10,080 nested subscriptions whose unsubscribe overflows the stack.
 * This one keeps every successor on the first action instead, and drops the
 * finished one from it, so the chain never grows. And rxjs queues an action
 * by pushing it and sorting the whole queue (a comparator call per queued
 * action): a day's trace schedules its 38,000 points up front, so every timer
 * and write of the replay sorted them all again (a 24-hour replay took
 * minutes). This one inserts it where the sort would put it (after every
 * action due no later, among equal times by index), found by bisection.
 */
class SteppedAction<T> extends VirtualAction<T> {
  private first: SteppedAction<T> | undefined;

  override schedule(state?: T, delay = 0): Subscription {
    if (!Number.isFinite(delay) || this.closed) return Subscription.EMPTY;
    if (!this.id) return super.schedule(state, delay);
    this.active = false;
    const first = this.first ?? this;
    const next = new SteppedAction(this.scheduler, this.work);
    next.first = first;
    first.add(next);
    if (first !== this) first.remove(this);
    return next.schedule(state, delay);
  }

  protected override requestAsyncId(
    scheduler: VirtualTimeScheduler,
    _id?: unknown,
    delay = 0,
  ): ReturnType<VirtualAction<T>['requestAsyncId']> {
    this.delay = scheduler.frame + delay;
    const actions = scheduler.actions as unknown as Queued[];
    const me = this as unknown as Queued;
    let lo = 0;
    let hi = actions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(actions[mid] as Queued, me)) lo = mid + 1;
      else hi = mid;
    }
    actions.splice(lo, 0, me);
    return 1;
  }
}

export class SteppedScheduler extends VirtualTimeScheduler {
  constructor() {
    super(SteppedAction, Infinity);
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
