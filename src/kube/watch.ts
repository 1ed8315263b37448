// A list+watch informer that does not give up. client-node's ListWatch
// recovers by itself from 410 Gone and watch timeouts, but stops for good on
// any other error; this wrapper restarts it with exponential backoff and
// jitter, reports its life as typed events, and offers the cache as an RxJS
// Observable that emits only once the first list has completed, so consumers
// never act on half the picture. Every watch asks for bookmarks, so a quiet
// one stays open (docs/decisions/0010), and is kept as client-go's reflector
// keeps it (docs/decisions/0031): the server ends it after timeoutSeconds,
// random between 5 and 10 minutes; client-node's 30 s inactivity abort,
// shorter than kube-apiserver's one-minute bookmark period, is lengthened to
// 3 minutes, a dead connection's detector only; a watch that ends or is
// aborted resumes from the last resourceVersion seen (bookmarks' included),
// and only a version too old (410 Gone, Expired) lists again, as ListWatch
// does by itself. Once stopped, nothing is watched any
// more: ListWatch re-watches by itself after the server closes a watch, after
// a wait that stop() does not interrupt, so the Watch it is given refuses new
// watches once closed and aborts those still starting, and the wait ends at
// stop() (found by the chaos runs: a watch opened after stop() kept a
// process from exiting on SIGTERM).
import { ListWatch, Watch } from './client-node.ts';
import type {
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  ListPromise,
} from '@kubernetes/client-node';
import type { Observable } from 'rxjs';
import { defer, ReplaySubject, Subject } from 'rxjs';
import { systemClock, type Clock } from '../clock/clock.ts';
import type { Logger } from '../log/logger.ts';
import { Backoff, DEFAULT_BACKOFF } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { apiErrorInfo } from './errors.ts';
import type { ApiErrorInfo } from './errors.ts';

export type WatchEvent<T> =
  /** A list completed; `resourceVersion`: the version the cache is current at (the list's, or a later event's). */
  | { type: 'synced'; resourceVersion?: string }
  /**
   * A list request (the first, a restart's, or a re-list after 410 Gone) is
   * about to be sent, and then its answer, before the cache takes it in: the
   * stream goes on from it, and it is newer than anything received before
   * it was sent (src/fulfiller/versions.ts orders by that).
   */
  | { type: 'listing' }
  | { type: 'listed'; items: T[]; resourceVersion?: string }
  | { type: 'error'; error: unknown; info: ApiErrorInfo }
  | { type: 'restarting'; delayMs: number }
  | { type: 'add' | 'update' | 'delete'; object: T };

/**
 * How long a watch stream may stay silent before the client gives up on its
 * connection and re-watches from the last version seen. kube-apiserver sends
 * a bookmark on a quiet watch every minute (up to about a second either
 * side, and it drops one for a watcher whose buffer is full), so a live
 * connection is never silent for much more than a minute, two after a
 * dropped bookmark; three minutes tolerates that and a minute of delay
 * besides, and stays below undici's 300 s bodyTimeout, which would end the
 * watch as an error. client-go has no such limit (TCP keepalive and
 * timeoutSeconds only); this is one for a connection that died silently.
 */
export const WATCH_INACTIVITY_MS = 180_000;

/** client-go reflector's minWatchTimeout: a watch's timeoutSeconds is random in [5, 10) minutes. */
export const MIN_WATCH_TIMEOUT_S = 300;

/** A watch's timeoutSeconds as client-go's reflector picks it: minWatchTimeout × (1 + rand). */
export function watchTimeoutSeconds(random: () => number = Math.random): number {
  return Math.floor(MIN_WATCH_TIMEOUT_S * (1 + random()));
}

export interface WatchResourceOptions<T extends KubernetesObject> {
  kc: KubeConfig;
  /** Collection path, e.g. `/apis/acn.azure.com/v1alpha/namespaces/kube-system/nodenetworkconfigs`. */
  path: string;
  /** Lists the collection (same selectors as the watch). */
  listFn: ListPromise<T>;
  labelSelector?: string;
  fieldSelector?: string;
  /** Restart delays after an error. */
  backoff?: BackoffOptions;
  /** The backoff is reset once the informer has run this long without error. */
  healthyAfterMs?: number;
  logger: Logger;
  /** Name used in logs, e.g. "nnc". */
  name?: string;
  random?: () => number;
  /** Restart and backoff-reset timers, and ListWatch's wait before a re-watch. */
  clock?: Pick<Clock, 'setTimeout' | 'clearTimeout' | 'sleep'>;
  /**
   * Client-side inactivity timeout of a watch stream (WATCH_INACTIVITY_MS by
   * default); keep it above the server's bookmark period. For tests, scaled
   * with a shortened period.
   */
  watchInactivityMs?: number;
}

/**
 * client-node's Watch, asking for bookmarks and a client-go timeoutSeconds on
 * every watch request; close() ends it for good.
 */
export class BookmarkingWatch extends Watch {
  private closed = false;
  private readonly live = new Set<AbortController>();
  /** Picks each watch's timeoutSeconds (client-go's range). */
  timeoutSeconds: () => number = () => watchTimeoutSeconds();

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    if (this.closed) {
      // Refused without a request: the caller's request is over at once.
      const refused = new AbortController();
      refused.abort();
      return refused;
    }
    const started: { controller?: AbortController } = {};
    const finished = (err: unknown): void => {
      if (started.controller) this.live.delete(started.controller);
      done(err);
    };
    const controller = await super.watch(
      path,
      { timeoutSeconds: this.timeoutSeconds(), ...queryParams, allowWatchBookmarks: true },
      callback,
      finished,
    );
    started.controller = controller;
    if (this.closed) controller.abort();
    else if (!controller.signal.aborted) this.live.add(controller);
    return controller;
  }

  /** No watch from now on; the ones open or starting are aborted. */
  close(): void {
    this.closed = true;
    for (const c of this.live) c.abort();
    this.live.clear();
  }
}

/**
 * A BookmarkingWatch, with client-node's 30 s inactivity timeout (which also
 * bounds the wait for the answer's headers) replaced by `inactivityMs`.
 */
export function bookmarkingWatch(
  kc: KubeConfig,
  inactivityMs: number = WATCH_INACTIVITY_MS,
  random?: () => number,
): BookmarkingWatch {
  const watch = new BookmarkingWatch(kc);
  if (!Number.isFinite(inactivityMs) || inactivityMs <= 0)
    throw new Error(
      `watch inactivity timeout must be a positive number of ms, got ${inactivityMs}`,
    );
  // Declared private in client-node's typings, but a plain instance field
  // (set to 30,000 by Watch's constructor; test/kube/watch-bookmarks pins it).
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = inactivityMs;
  if (random) watch.timeoutSeconds = () => watchTimeoutSeconds(random);
  return watch;
}

export interface ResourceWatch<T> {
  /** Lifecycle and object events, hot: subscribe right after creation. */
  readonly events$: Observable<WatchEvent<T>>;
  /** The whole cache after every change; first emission after the first list. */
  readonly cache$: Observable<T[]>;
  /** True once a list has completed. */
  readonly synced: boolean;
  /** The cache now (empty before the first list). */
  list(): T[];
  /** Looks an object up in the cache. */
  get(name: string, namespace?: string): T | undefined;
  /** Resolves at the first sync; rejects if stopped before. */
  whenSynced(): Promise<void>;
  /** Stops watching and completes both observables; idempotent. */
  stop(): Promise<void>;
}

/** Starts a restartable informer; see the header comment. */
export function watchResource<T extends KubernetesObject>(
  options: WatchResourceOptions<T>,
): ResourceWatch<T> {
  const clock = options.clock ?? systemClock;
  const log = options.logger.child({ watch: options.name ?? options.path });
  const backoff = new Backoff(options.backoff ?? DEFAULT_BACKOFF, options.random);
  const healthyAfterMs = options.healthyAfterMs ?? 10_000;
  const events = new Subject<WatchEvent<T>>();
  const cache = new ReplaySubject<T[]>(1);
  const watcher = bookmarkingWatch(options.kc, options.watchInactivityMs, options.random);
  // ListWatch's wait before re-watching a closed watch ends at stop().
  const stopping = new AbortController();
  const delayFn = (ms: number): Promise<void> => clock.sleep(ms, stopping.signal);
  let stopped = false;
  const listFn = async (): Promise<KubernetesListObject<T>> => {
    events.next({ type: 'listing' });
    const list = await options.listFn();
    const rv = list.metadata?.resourceVersion;
    if (!stopped)
      events.next({
        type: 'listed',
        items: list.items ?? [],
        ...(rv ? { resourceVersion: rv } : {}),
      });
    return list;
  };
  const lw = new ListWatch<T>(
    options.path,
    watcher,
    listFn,
    false,
    options.labelSelector,
    options.fieldSelector,
    { delayFn },
  );

  let synced = false;
  let running = false; // a start() is in flight or the watch is up
  let failedDuringStart = false;
  let restartTimer: unknown;
  let healthyTimer: unknown;
  let resolveSynced: () => void = () => {};
  let rejectSynced: (err: Error) => void = () => {};
  const syncedPromise = new Promise<void>((resolve, reject) => {
    resolveSynced = resolve;
    rejectSynced = reject;
  });
  syncedPromise.catch(() => {}); // only an error for those who wait on it

  // The cache is copied out only for someone listening: a watch read through
  // its events and list() (the fulfiller's, every kubelet's) pays nothing a
  // change. One unheard change marks the buffered list stale, and the next
  // subscriber (or stop, for those after it) gets the cache as it is then.
  let stale = false;
  // ListWatch.list() without a namespace builds a new array each call: the caller's own.
  const copy = (): T[] => lw.list() as T[];
  const freshen = (): void => {
    if (!stale || !synced) return;
    stale = false;
    cache.next(copy());
  };
  const publish = (): void => {
    if (!synced || stopped) return;
    stale = true;
    if (cache.observed) freshen();
  };
  for (const verb of ['add', 'update', 'delete'] as const) {
    lw.on(verb, (object: T) => {
      if (stopped) return;
      events.next({ type: verb, object });
      publish();
    });
  }

  const clearHealthy = (): void => {
    if (healthyTimer !== undefined) clock.clearTimeout(healthyTimer);
    healthyTimer = undefined;
  };

  const scheduleRestart = (): void => {
    if (stopped || restartTimer !== undefined) return;
    const delayMs = backoff.next();
    log.warn('watch restarting', { delayMs, failures: backoff.failures });
    events.next({ type: 'restarting', delayMs });
    restartTimer = clock.setTimeout(() => {
      restartTimer = undefined;
      void run();
    }, delayMs);
  };

  lw.on('error', (error: unknown) => {
    running = false;
    if (stopped) return; // stop() aborts the request: not a failure
    failedDuringStart = true;
    clearHealthy();
    const info = apiErrorInfo(error);
    log.warn('watch failed', { error: info.message, statusCode: info.statusCode });
    events.next({ type: 'error', error, info });
    scheduleRestart();
  });

  const run = async (): Promise<void> => {
    if (stopped || running) return;
    running = true;
    failedDuringStart = false;
    try {
      await lw.start();
    } catch (error) {
      // start() reports through the error callback; this is belt and braces.
      if (!failedDuringStart && !stopped) {
        running = false;
        const info = apiErrorInfo(error);
        events.next({ type: 'error', error, info });
        scheduleRestart();
      }
      return;
    }
    if (stopped || failedDuringStart) return;
    const first = !synced;
    synced = true;
    log.debug('watch synced', { objects: lw.list().length, first });
    const rv = lw.latestResourceVersion();
    events.next({ type: 'synced', ...(rv ? { resourceVersion: rv } : {}) });
    publish();
    resolveSynced();
    clearHealthy();
    healthyTimer = clock.setTimeout(() => {
      healthyTimer = undefined;
      backoff.reset();
    }, healthyAfterMs);
  };

  void run();

  return {
    events$: events.asObservable(),
    cache$: defer(() => {
      if (!stopped) freshen();
      return cache;
    }),
    get synced() {
      return synced;
    },
    list: () => (synced ? copy() : []),
    get: (name, namespace) => lw.get(name, namespace),
    whenSynced: () => syncedPromise,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (restartTimer !== undefined) clock.clearTimeout(restartTimer);
      clearHealthy();
      watcher.close();
      stopping.abort();
      await lw.stop();
      rejectSynced(new Error('watch stopped before its first sync'));
      events.complete();
      freshen();
      cache.complete();
    },
  };
}
