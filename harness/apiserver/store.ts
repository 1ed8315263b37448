// The in-memory object store: objects keyed by resource, namespace and name,
// one global resourceVersion counter (monotonic across all resources, as etcd's
// revision) and a bounded ring of past events so watches can resume from a
// resourceVersion. Stored objects are never mutated; writers commit new ones.
import type { KObject } from '../../src/kube/json-object.ts';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: EventType;
  /** Resource key (`pods`, `acn.azure.com/nodenetworkconfigs`). */
  resource: string;
  rv: number;
  object: KObject;
  /** The object before the change (MODIFIED, DELETED): lets filtered watches see objects leave. */
  prev?: KObject;
}

export type StoreListener = (ev: StoreEvent) => void;

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export class ObjectStore {
  private rv: number;
  private readonly data = new Map<string, Map<string, KObject>>();
  private readonly ring: (StoreEvent | undefined)[];
  private head = 0; // index of the oldest retained event
  private count = 0;
  /** Watches must start at or after this version: older history is gone. */
  private compactedRv: number;
  private readonly listeners = new Set<StoreListener>();

  constructor(historyLimit = 10_000, startRv = 1) {
    if (!Number.isInteger(historyLimit) || historyLimit < 1)
      throw new Error(`historyLimit must be a positive integer, got ${historyLimit}`);
    this.ring = new Array<StoreEvent | undefined>(historyLimit);
    this.rv = startRv;
    this.compactedRv = startRv;
  }

  currentRv(): number {
    return this.rv;
  }

  oldestWatchableRv(): number {
    return this.compactedRv;
  }

  get(resource: string, namespace: string | undefined, name: string): KObject | undefined {
    return this.data.get(resource)?.get(objectKey(namespace, name));
  }

  /**
   * Objects of a resource (in one namespace when given, passing `filter` when
   * given), sorted by namespace then name. Filtering before sorting keeps a
   * selective list (one node's pods out of 30,000) from sorting them all.
   * `name`, when the caller knows only the object of that name (in
   * `namespace`, or cluster-scoped) can pass `filter`, looks that one up
   * instead of scanning: a thousand sidecars each listing their own NNC by
   * `metadata.name` cost a thousand look-ups, not a million filter calls.
   */
  list(
    resource: string,
    namespace?: string,
    filter?: (obj: KObject) => boolean,
    name?: string,
  ): KObject[] {
    const bucket = this.data.get(resource);
    if (!bucket) return [];
    if (name !== undefined) {
      const obj = bucket.get(objectKey(namespace, name));
      return obj && (!filter || filter(obj)) ? [obj] : [];
    }
    const out: [string, KObject][] = [];
    for (const [key, obj] of bucket) {
      if (namespace && obj.metadata.namespace !== namespace) continue;
      if (filter && !filter(obj)) continue;
      out.push([key, obj]);
    }
    out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return out.map((e) => e[1]);
  }

  size(resource: string): number {
    return this.data.get(resource)?.size ?? 0;
  }

  /**
   * Commits a write: stamps the next resourceVersion on `obj` (which the
   * caller hands over and must not touch afterwards), stores or removes it,
   * records the event and tells every listener, synchronously and in order.
   */
  commit(type: EventType, resource: string, obj: KObject, prev?: KObject): StoreEvent {
    this.rv += 1;
    obj.metadata.resourceVersion = String(this.rv);
    const ns = typeof obj.metadata.namespace === 'string' ? obj.metadata.namespace : undefined;
    const key = objectKey(ns, String(obj.metadata.name));
    let bucket = this.data.get(resource);
    if (!bucket) {
      bucket = new Map();
      this.data.set(resource, bucket);
    }
    if (type === 'DELETED') bucket.delete(key);
    else bucket.set(key, obj);
    const ev: StoreEvent = { type, resource, rv: this.rv, object: obj };
    if (prev) ev.prev = prev;
    this.record(ev);
    for (const l of this.listeners) l(ev);
    return ev;
  }

  private record(ev: StoreEvent): void {
    const cap = this.ring.length;
    if (this.count === cap) {
      const dropped = this.ring[this.head] as StoreEvent;
      this.compactedRv = dropped.rv;
      this.head = (this.head + 1) % cap;
      this.count -= 1;
    }
    this.ring[(this.head + this.count) % cap] = ev;
    this.count += 1;
  }

  /**
   * Every retained event after `rv` (only those of `resource` when given),
   * oldest first; undefined when `rv` is older than the history.
   */
  eventsAfter(rv: number, resource?: string): StoreEvent[] | undefined {
    if (rv < this.compactedRv) return undefined;
    const cap = this.ring.length;
    // Binary search for the first retained event with rv > `rv`.
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.ring[(this.head + mid) % cap] as StoreEvent).rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    const out: StoreEvent[] = [];
    for (let i = lo; i < this.count; i++) {
      const ev = this.ring[(this.head + i) % cap] as StoreEvent;
      if (resource === undefined || ev.resource === resource) out.push(ev);
    }
    return out;
  }

  /** Forgets all history: watches from any earlier version now get 410 Gone. */
  compact(): void {
    this.compactedRv = this.rv;
    this.ring.fill(undefined);
    this.head = 0;
    this.count = 0;
  }

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  listenerCount(): number {
    return this.listeners.size;
  }
}
