// What users feel, in production: how long each pod waited for its address,
// from its creation on the node to the CNI request that got one, and how many
// requests were refused for want of a free IP. The same definition as
// `simulate`'s pod wait and the embedded report's.
//
// "Creation on the node" is when the pod watch first showed the pod here;
// when the pod's own timestamp (its PodScheduled condition, else its
// creationTimestamp, both whole seconds in Kubernetes) is older than that by
// more than a second, the sidecar saw it late (it restarted, its watch was
// down) and that timestamp is used instead. Each pod is counted once.

export interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    creationTimestamp?: string | Date;
  } | null;
  spec?: { nodeName?: string; hostNetwork?: boolean } | null;
  status?: {
    conditions?: { type?: string; status?: string; lastTransitionTime?: string | Date }[] | null;
  } | null;
}

export interface WaitSink {
  /** One pod's wait, in seconds. */
  observeWait(seconds: number): void;
  /** One CNI request refused for want of a free IP. */
  countRefused(): void;
}

const LATE_MS = 1000;
/** Addresses handed out before the watch showed the pod, remembered at most. */
const MAX_EARLY = 1024;

function ms(value: string | Date | undefined): number | undefined {
  if (value === undefined) return undefined;
  const t = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isFinite(t) ? t : undefined;
}

/** The pod's own idea of when it landed on the node: PodScheduled, else creation. */
export function podTimestamp(pod: PodLike): number | undefined {
  const scheduled = pod.status?.conditions?.find(
    (c) => c?.type === 'PodScheduled' && c.status === 'True',
  );
  return ms(scheduled?.lastTransitionTime) ?? ms(pod.metadata?.creationTimestamp ?? undefined);
}

export function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

interface Tracked {
  start: number;
  observed: boolean;
  /** The podsNow call that last saw the pod. */
  seen: number;
}

/**
 * A pod object's key, or null for a host-network or nameless pod: fields a
 * pod never changes, worked out once per object (the watch hands the same
 * objects to every call until a pod changes).
 */
const keys = new WeakMap<PodLike, string | null>();

function keyOf(pod: PodLike): string | null {
  let key = keys.get(pod);
  if (key === undefined) {
    const name = pod.metadata?.name;
    key =
      typeof name !== 'string' || pod.spec?.hostNetwork === true
        ? null
        : podKey(pod.metadata?.namespace ?? 'default', name);
    keys.set(pod, key);
  }
  return key;
}

export class PodWaitTracker {
  private readonly sink: WaitSink;
  private readonly now: () => number;
  private readonly pods = new Map<string, Tracked>();
  /** Pods that got an address before the watch showed them (a race): when, by key. */
  private readonly early = new Map<string, number>();
  private calls = 0;

  constructor(sink: WaitSink, now: () => number = Date.now) {
    this.sink = sink;
    this.now = now;
  }

  /** The node's pods as the watch has them now (the whole list, after every change). */
  podsNow(list: readonly PodLike[]): void {
    const now = this.now();
    const call = ++this.calls;
    let present = 0;
    for (const pod of list) {
      const key = keyOf(pod);
      if (key === null) continue;
      const tracked = this.pods.get(key);
      if (tracked !== undefined) {
        if (tracked.seen !== call) present++;
        tracked.seen = call;
        continue;
      }
      present++;
      const own = podTimestamp(pod);
      const assignedAt = this.early.get(key);
      if (assignedAt !== undefined) {
        // Its address came first: the wait is what its own timestamp says, if anything.
        this.early.delete(key);
        this.pods.set(key, { start: now, observed: true, seen: call });
        this.sink.observeWait(Math.max(0, assignedAt - (own ?? assignedAt)) / 1000);
        continue;
      }
      const start = own !== undefined && own < now - LATE_MS ? own : now;
      this.pods.set(key, { start, observed: false, seen: call });
    }
    // Every tracked pod was seen: none is gone.
    if (present === this.pods.size) return;
    for (const [key, tracked] of this.pods) if (tracked.seen !== call) this.pods.delete(key);
  }

  /** A CNI request got an address for the pod; its first one is its wait. Returns the wait (s) when counted. */
  assigned(namespace: string, name: string): number | undefined {
    const key = podKey(namespace, name);
    const t = this.pods.get(key);
    if (t === undefined) {
      if (!this.early.has(key)) {
        if (this.early.size >= MAX_EARLY)
          this.early.delete(this.early.keys().next().value as string);
        this.early.set(key, this.now());
      }
      return undefined;
    }
    if (t.observed) return undefined;
    t.observed = true;
    const seconds = Math.max(0, this.now() - t.start) / 1000;
    this.sink.observeWait(seconds);
    return seconds;
  }

  /** A CNI request was refused: no free IP. */
  refused(): void {
    this.sink.countRefused();
  }

  /** Pods tracked (bounded by the pods on the node, plus at most MAX_EARLY early ones). */
  size(): number {
    return this.pods.size + this.early.size;
  }
}
