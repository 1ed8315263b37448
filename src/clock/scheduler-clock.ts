// The one clock on an rxjs scheduler: code whose tests run on rxjs virtual
// time (TestScheduler, the simulation's stepped scheduler) takes the same
// Clock as the rest of the product, and its timers run on that time.
import { Subscription, type SchedulerLike } from 'rxjs';
import { sleepOn, type Clock } from './clock.ts';

/** A Clock whose time and timers are `scheduler`'s. */
export function schedulerClock(scheduler: SchedulerLike): Clock {
  const clock: Clock = {
    now: () => scheduler.now(),
    setTimeout: (fn, ms) => scheduler.schedule(() => fn(), Math.max(0, ms)),
    clearTimeout(handle) {
      if (handle instanceof Subscription) handle.unsubscribe();
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
  };
  return clock;
}
