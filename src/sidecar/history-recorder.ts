// Records what the monitor observes (demand and target over time) in the node
// store's pool history, in batches: one transaction every few seconds rather
// than one synchronous commit per pod. Pruned to the retention window and the
// row cap every few minutes, so each prune cuts a few minutes' growth, not an
// hour's (an hourly prune of 100,000 rows showed as a step in the sidecar's
// memory at minute 60 of a churn bench). A failure to record is logged and
// costs only history, never the pool.
import type { Observable, Subscription } from 'rxjs';
import { unrefSystemClock, type Clock, type TimerHandle } from '../clock/clock.ts';
import {
  HISTORY_MAX_ROWS,
  HISTORY_RETENTION_MS,
  type IdleAccountRecord,
  type PoolHistory,
} from '../ipstore/pool-history.ts';
import type { Logger } from '../log/logger.ts';
import type { Observation } from '../scaling/policies/policy.ts';
import { errorText } from '../log/error-text.ts';

export interface HistoryRecorderOptions {
  history: PoolHistory;
  observations$: Observable<Observation>;
  log: Logger;
  /** Time and the flush timer; by default one that does not hold the process open. */
  clock?: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  /** How often buffered observations are written (default 5 s). */
  flushMs?: number;
  /** How often old rows are pruned (default 5 min). */
  pruneMs?: number;
  retentionMs?: number;
  maxRows?: number;
  /**
   * The idle account to keep in the store (docs/decisions/0034): `carry`
   * gives it as it is now (undefined: nothing to save), saved every
   * `everyMs` (default 1 min) and on stop.
   */
  account?: { record: IdleAccountRecord; carry: () => unknown; everyMs?: number };
}

export interface HistoryRecorder {
  /** Writes what is buffered now. */
  flush(): void;
  /** Stops recording; writes what is buffered. Idempotent. */
  stop(): void;
}

export function recordPoolHistory(o: HistoryRecorderOptions): HistoryRecorder {
  const clock = o.clock ?? unrefSystemClock;
  const now = (): number => clock.now();
  const flushMs = o.flushMs ?? 5000;
  const retention = o.retentionMs ?? HISTORY_RETENTION_MS;
  const maxRows = o.maxRows ?? HISTORY_MAX_ROWS;
  const pruneMs = o.pruneMs ?? 300_000;
  let buffer: Observation[] = [];
  let lastPrune = Number.NEGATIVE_INFINITY;
  let stopped = false;
  let lastSave = Number.NEGATIVE_INFINITY;
  const saveAccount = (force: boolean): void => {
    const a = o.account;
    const t = now();
    if (a === undefined || (!force && t - lastSave < (a.everyMs ?? 60_000))) return;
    lastSave = t;
    try {
      const state = a.carry();
      if (state !== undefined) a.record.save(t, state);
    } catch (err) {
      o.log.warn('idle account not saved', { error: errorText(err) });
    }
  };
  const flush = (): void => {
    const rows = buffer;
    buffer = [];
    try {
      if (rows.length > 0) o.history.append(rows);
      const t = now();
      if (t - lastPrune >= pruneMs) {
        lastPrune = t;
        const dropped = o.history.prune(t - retention, maxRows);
        if (dropped > 0) o.log.debug('pool history pruned', { dropped });
      }
    } catch (err) {
      o.log.warn('pool history not recorded', {
        rows: rows.length,
        error: errorText(err),
      });
    }
    saveAccount(false);
  };
  const sub: Subscription = o.observations$.subscribe((obs) => {
    if (!stopped) buffer.push(obs);
  });
  let timer: TimerHandle;
  const every = (): void => {
    timer = clock.setTimeout(() => {
      every();
      flush();
    }, flushMs);
  };
  every();
  return {
    flush,
    stop: () => {
      if (stopped) return;
      stopped = true;
      clock.clearTimeout(timer);
      sub.unsubscribe();
      flush();
      saveAccount(true);
    },
  };
}
