// One watch stream: replays history after the requested resourceVersion (or
// the current state as ADDED events when none is given), then follows the
// store live. Everything runs synchronously on the store's commit, so no event
// can fall between the replay and the live part, and each is sent once, in
// order. An object leaving a selector's scope is sent as DELETED, one entering
// as ADDED, as the real server's watch cache does.
import type { JsonObject, KObject } from '../../src/kube/json-object.ts';
import { resourceKey, type ResourceInfo } from './resources.ts';
import type { Selector } from '../../src/kube/selectors.ts';
import type { EventType, ObjectStore, StoreEvent } from './store.ts';
import type { IndexKey, WatchIndex } from './watch-index.ts';

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
  if (req.bookmarks) {
    const tick = (): void => {
      bookmark();
      timers[0] = setTimeout(tick, req.bookmarkIntervalMs);
    };
    timers[0] = setTimeout(tick, req.bookmarkIntervalMs);
  }
  if (req.timeoutMs !== undefined) timers[1] = setTimeout(stop, req.timeoutMs);
  return { resource: req.resource, stop };
}
