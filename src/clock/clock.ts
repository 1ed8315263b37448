// The product's one clock: what time it is, timers, and waiting. Every loop
// that waits, retries or times out takes one injected, so its tests drive
// time (docs/design.md "Two parts": time and delays are injected): a manual
// clock in unit tests, rxjs virtual time through scheduler-clock.ts. The pool
// monitor's core keeps its rxjs schedulers. A consumer that needs only part
// of it asks for a Pick<Clock, ...>.

/** A pending timer, as setTimeout returned it; only its clock's clearTimeout reads it. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds on the clock's time line (systemClock: since the epoch). */
  now(): number;
  /** Runs `fn` once after `ms` (a negative `ms` counts as 0). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer that has not run; any other handle, undefined included, is ignored. */
  clearTimeout(handle: TimerHandle): void;
  /** Resolves after `ms`, or early and without error once `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** A clock for loops that arm timers and never sleep (queues, keepers, terms). */
export type ClockTimers = Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;

/** Clock.sleep made of a clock's own timers. */
export function sleepOn(
  timers: Pick<Clock, 'setTimeout' | 'clearTimeout'>,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      timers.clearTimeout(handle);
      resolve();
    };
    const handle = timers.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Waits as clock.sleep does, but an abort rejects with the signal's reason (a request's wait). */
export async function sleepOrAbort(
  clock: Pick<Clock, 'sleep'>,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  await clock.sleep(ms, signal);
  signal?.throwIfAborted();
}

function systemTimers(now: () => number, unref: boolean): Clock {
  const clock: Clock = {
    now,
    setTimeout(fn, ms) {
      const timer = setTimeout(fn, Math.max(0, ms));
      if (unref) timer.unref();
      return timer;
    },
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
  };
  return clock;
}

/** The machine's wall clock (Date.now) and Node's timers, which keep the process alive. */
export const systemClock: Clock = systemTimers(() => Date.now(), false);

/**
 * The system clock whose timers do not keep the process alive (Node's
 * unref()): for a background loop that lives as long as something else keeps
 * the process up, and must not hold it open after that.
 */
export const unrefSystemClock: Clock = systemTimers(() => Date.now(), true);

/**
 * The system clock on a monotonic time line (performance.now(): ms since the
 * process started), for intervals a step of the wall clock (NTP, a VM
 * resumed) must neither stretch nor shrink. Its now() is no date.
 */
export const monotonicClock: Clock = systemTimers(() => performance.now(), false);
