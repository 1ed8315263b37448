// Routes store events to watches without asking every watch. With thousands
// of per-node watches (`spec.nodeName=node-7`, `metadata.name=node-7`) a
// plain fan-out makes every write cost O(watches). Here a watch whose field
// selector has an equality term `path=value` is filed under that term, and an
// event only visits the watches filed under the values its object has (now
// and before the change, so a watch still sees an object leave its scope)
// plus the unfiled ones. This only narrows who is asked: each visited watch
// still applies its full selector, so what it sends is exactly what the
// plain fan-out would send.
import { fieldValue, parseFieldSelector } from '../../src/kube/selectors.ts';
import type { ObjectStore, StoreEvent, StoreListener } from './store.ts';

/** The equality term a watch is filed under. */
export interface IndexKey {
  path: string;
  value: string;
}

/** The first `path=value` (or `==`) term of a field selector, if any. Throws as parseFieldSelector. */
export function indexKeyOf(fieldSelector: string | null | undefined): IndexKey | undefined {
  const req = parseFieldSelector(fieldSelector).find((r) => r.op === '=');
  return req ? { path: req.key, value: req.values[0] as string } : undefined;
}

/** The value of a `metadata.name=X` (or `==`) term of a field selector, if it has one. Throws as parseFieldSelector. */
export function nameTermOf(fieldSelector: string | null | undefined): string | undefined {
  const req = parseFieldSelector(fieldSelector).find(
    (r) => r.op === '=' && r.key === 'metadata.name',
  );
  return req?.values[0];
}

interface ResourceWatches {
  /** Watches without an equality term: they see every event of the resource. */
  all: Set<StoreListener>;
  /** path -> value -> watches filed under `path=value`. */
  byPath: Map<string, Map<string, Set<StoreListener>>>;
  /** Each filed path split at its dots, once, not at every event. */
  parts: Map<string, string[]>;
}

export class WatchIndex {
  private readonly resources = new Map<string, ResourceWatches>();
  private count = 0;

  constructor(store: ObjectStore) {
    store.subscribe((ev) => this.dispatch(ev));
  }

  /** Number of registered watch listeners. */
  size(): number {
    return this.count;
  }

  /** Registers a listener for `resource` events, filed under `key` when given; returns its removal. */
  add(resource: string, key: IndexKey | undefined, listener: StoreListener): () => void {
    let r = this.resources.get(resource);
    if (!r) {
      r = { all: new Set(), byPath: new Map(), parts: new Map() };
      this.resources.set(resource, r);
    }
    let set: Set<StoreListener>;
    if (key) {
      let values = r.byPath.get(key.path);
      if (!values) {
        values = new Map();
        r.byPath.set(key.path, values);
        r.parts.set(key.path, key.path.split('.'));
      }
      let bucket = values.get(key.value);
      if (!bucket) {
        bucket = new Set();
        values.set(key.value, bucket);
      }
      set = bucket;
    } else set = r.all;
    const entry: StoreListener = (ev) => listener(ev);
    set.add(entry);
    this.count += 1;
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      set.delete(entry);
      this.count -= 1;
      if (key && set.size === 0) {
        const values = r.byPath.get(key.path);
        if (values?.get(key.value) === set) values.delete(key.value);
        if (values?.size === 0) {
          r.byPath.delete(key.path);
          r.parts.delete(key.path);
        }
      }
    };
  }

  /** The listeners an event must visit, in no particular order; exported for tests. */
  candidates(ev: StoreEvent): StoreListener[] {
    const out: StoreListener[] = [];
    this.visit(ev, (l) => out.push(l));
    return out;
  }

  private dispatch(ev: StoreEvent): void {
    this.visit(ev, (l) => l(ev));
  }

  private visit(ev: StoreEvent, fn: (l: StoreListener) => void): void {
    const r = this.resources.get(ev.resource);
    if (!r) return;
    for (const l of r.all) fn(l);
    for (const [path, values] of r.byPath) {
      const parts = r.parts.get(path);
      const now = fieldValue(ev.object, path, parts);
      const bucket = values.get(now);
      if (bucket) for (const l of bucket) fn(l);
      if (!ev.prev) continue;
      const before = fieldValue(ev.prev, path, parts);
      // A watch sits in one bucket only, so the two buckets never share a listener.
      if (before === now) continue;
      const prevBucket = values.get(before);
      if (prevBucket) for (const l of prevBucket) fn(l);
    }
  }
}
