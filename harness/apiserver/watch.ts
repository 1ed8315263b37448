// One watch stream: replays history after the requested resourceVersion (or
// the current state as ADDED events when none is given), then follows the
// store live. Everything runs synchronously on the store's commit, so no event
// can fall between the replay and the live part, and each is sent once, in
// order. An object leaving a selector's scope is sent as DELETED, one entering
// as ADDED, as the real server's watch cache does.
// Bookmarks (allowWatchBookmarks=true) follow kube-apiserver's watch cache
// (staging/src/k8s.io/apiserver/pkg/storage/cacher): one a period after the
// watch starts and after each bookmark (cacher.go `defaultBookmarkFrequency
// = time.Minute`), or 2 s before the watch's deadline when that comes first
// (cache_watcher.go nextBookmarkTime), none once that has passed; the due
// time is filed in a slot of a sixtieth of the period (1 s for a minute,
// cacher.go watcherBookmarkTimeBuckets) that goes out as its slot begins, so
// a bookmark comes up to a sixtieth early, never late (upstream's own 1 to
// 1.25 s polling of the buckets can make it up to 1.25 s late as well).
import type { JsonObject, KObject } from '../../src/kube/json-object.ts';
import { resourceKey, type ResourceInfo } from './resources.ts';
import type { Selector } from '../../src/kube/selectors.ts';
import type { EventType, ObjectStore, StoreEvent } from './store.ts';
import type { IndexKey, WatchIndex } from './watch-index.ts';

/** kube-apiserver's bookmark period (cacher.go defaultBookmarkFrequency). */
export const DEFAULT_BOOKMARK_INTERVAL_MS = 60_000;
/** A bookmark goes out this long before a watch's deadline (cache_watcher.go nextBookmarkTime). */
export const PRE_DEADLINE_BOOKMARK_MS = 2_000;

/**
 * When the next bookmark of a watch goes out, as kube-apiserver's watch cache
 * schedules it (see the header): undefined when there is none (the watch
 * ends within 2 s). `now` and `deadline` on one clock (performance.now()).
 */
export function nextBookmarkAt(
  now: number,
  intervalMs: number,
  deadline?: number,
): number | undefined {
  let due = now + intervalMs;
  if (deadline !== undefined) due = Math.min(due, deadline - PRE_DEADLINE_BOOKMARK_MS);
  if (due <= now) return undefined;
  const slot = Math.max(1, Math.floor(intervalMs / 60));
  return Math.max(now, due - (due % slot));
}

export interface WatchSink {
  /** Sends one line (a JSON event without the newline). */
  send(line: string): void;
  end(): void;
}

export interface WatchRequest {
  resource: ResourceInfo;
  namespace?: string;
  selector: Selector;
  /** Resume after this version; undefined starts with the current state as ADDED events. */
  fromRv?: number;
  /** `sendInitialEvents=true`: current state first, then a bookmark marking its end. */
  sendInitialEvents?: boolean;
  bookmarks: boolean;
  /** Bookmark period (kube-apiserver: a minute); 0 sends none besides the initial-events-end one. */
  bookmarkIntervalMs: number;
  timeoutMs?: number;
  /** Turns an object into what goes on the wire (plain object or a Table). */
  encode(type: EventType | 'BOOKMARK', obj: KObject): string;
  /** Follow the store through this index (filed under `indexKey`) instead of subscribing to it directly. */
  index?: WatchIndex;
  /** An equality term of `selector`: only objects with this field value can be in scope. */
  indexKey?: IndexKey;
}

export interface ActiveWatch {
  resource: ResourceInfo;
  stop(): void;
}

/** The event a watch with this scope must see for a store event, if any. */
export function project(
  ev: StoreEvent,
  inScope: (o: KObject) => boolean,
): { type: EventType; object: KObject } | undefined {
  const now = inScope(ev.object);
  if (ev.type === 'ADDED') return now ? { type: 'ADDED', object: ev.object } : undefined;
  const before = ev.prev ? inScope(ev.prev) : now;
  if (ev.type === 'DELETED') return before ? { type: 'DELETED', object: ev.object } : undefined;
  if (before && now) return { type: 'MODIFIED', object: ev.object };
  if (now) return { type: 'ADDED', object: ev.object };
  if (before) return { type: 'DELETED', object: ev.object };
  return undefined;
}

export function tooOldError(rv: number): JsonObject {
  return {
    type: 'ERROR',
    object: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `too old resource version: ${rv}`,
      reason: 'Expired',
      code: 410,
    },
  };
}

export function startWatch(
  store: ObjectStore,
  req: WatchRequest,
  sink: WatchSink,
  onEnd: () => void,
): ActiveWatch {
  const key = resourceKey(req.resource);
  const inScope = (o: KObject): boolean =>
    (!req.namespace || o.metadata.namespace === req.namespace) && req.selector(o);
  let stopped = false;
  let unsubscribe = (): void => undefined;
  const timers: NodeJS.Timeout[] = [];
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    unsubscribe();
    for (const t of timers) clearTimeout(t);
    sink.end();
    onEnd();
  };
  const emit = (type: EventType | 'BOOKMARK', obj: KObject): void => {
    if (!stopped) sink.send(req.encode(type, obj));
  };
  const bookmark = (extra?: JsonObject): void => {
    const metadata: JsonObject = { resourceVersion: String(store.currentRv()) };
    if (extra) metadata.annotations = extra;
    emit('BOOKMARK', {
      kind: req.resource.kind,
      apiVersion: req.resource.group
        ? `${req.resource.group}/${req.resource.version}`
        : req.resource.version,
      metadata,
    });
  };

  if (req.fromRv !== undefined && !req.sendInitialEvents) {
    const past = store.eventsAfter(req.fromRv, key);
    if (past === undefined) {
      sink.send(JSON.stringify(tooOldError(req.fromRv)));
      stop();
      return { resource: req.resource, stop };
    }
    for (const ev of past) {
      const p = project(ev, inScope);
      if (p) emit(p.type, p.object);
    }
  } else {
    for (const obj of store.list(key, req.resource.namespaced ? req.namespace : undefined, inScope))
      emit('ADDED', obj);
    if (req.sendInitialEvents) bookmark({ 'k8s.io/initial-events-end': 'true' });
  }
  const follow = (ev: StoreEvent): void => {
    if (ev.resource !== key) return;
    const p = project(ev, inScope);
    if (p) emit(p.type, p.object);
  };
  unsubscribe = req.index ? req.index.add(key, req.indexKey, follow) : store.subscribe(follow);
  const deadline = req.timeoutMs !== undefined ? performance.now() + req.timeoutMs : undefined;
  if (req.bookmarks && req.bookmarkIntervalMs > 0) {
    const schedule = (): void => {
      const now = performance.now();
      const at = nextBookmarkAt(now, req.bookmarkIntervalMs, deadline);
      if (at !== undefined) timers[0] = setTimeout(tick, at - now);
    };
    const tick = (): void => {
      bookmark();
      schedule();
    };
    schedule();
  }
  if (req.timeoutMs !== undefined) timers[1] = setTimeout(stop, req.timeoutMs);
  return { resource: req.resource, stop };
}
