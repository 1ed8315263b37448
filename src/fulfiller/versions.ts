// What is known of the versions of one named object (docs/decisions/0036):
// the candidates that may be its current state, ordered by how they were
// learnt, never by comparing resourceVersions. Kubernetes says a
// resourceVersion is opaque: equal or not, never older or newer
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions).
// Two orders are sound instead:
//   - the watch stream delivers one resource's changes in the order they
//     were made (a re-list continues it), so a stream event is newer than
//     every earlier one;
//   - an answer (a GET, a write's answer, a list) shows a state at least as
//     new as anything received before its request was sent (kube-apiserver
//     serves them from etcd at the latest revision).
// And a uid never comes back: what was seen deleted is gone for good.
// Anything these cannot order stays a candidate: the fulfiller holds the
// union of their addresses (node-record.ts), which can only be too much,
// until the stream or a later answer settles them.
// Pure: the caller stamps each request and answer with `nextSeq()`.

let counter = 0;

/** A point in this process's order of requests and answers (not a time). */
export function nextSeq(): number {
  return ++counter;
}

export interface Versioned {
  metadata?: { uid?: string; resourceVersion?: string };
}

/** How an observation was learnt: from the watch stream, or by an answer to a request sent at `sent`. */
export type Source = { from: 'stream' } | { from: 'read'; sent: number };

interface Candidate<T> {
  object: T;
  uid: string;
  rv: string;
  stream: boolean;
  received: number;
}

/**
 * A version that something waits to see left behind (a write in doubt based
 * on it, a term's fence): `moved` once the object is known to be past it.
 */
export interface MovePoint {
  readonly uid: string;
  readonly rv: string;
  /** When `rv` was received: an answer to a request sent after shows a state at least as new. */
  readonly knownAt: number;
  /** The stream has delivered `rv`: any other version it delivers after is newer. */
  streamAt: boolean;
  moved: boolean;
}

/** The stream versions remembered to tell "passed" from "not reached" (a short tail is enough). */
const STREAM_TAIL = 8;

function uidOf(o: Versioned): string {
  return o.metadata?.uid ?? '';
}

function rvOf(o: Versioned): string {
  return o.metadata?.resourceVersion ?? '';
}

export class Versions<T extends Versioned> {
  private candidates: Candidate<T>[] = [];
  private readonly gone = new Set<string>();
  /** The last versions the stream delivered, newest last (`uid/rv`). */
  private tail: string[] = [];
  private readonly points = new Set<MovePoint>();

  /** The newest state known: the candidate received last; undefined when the object is gone. */
  latest(): T | undefined {
    let best: Candidate<T> | undefined;
    for (const c of this.candidates) if (!best || c.received > best.received) best = c;
    return best?.object;
  }

  /** Every state that may be the current one (their union is what the object may hold). */
  all(): T[] {
    return this.candidates.map((c) => c.object);
  }

  /** The uids still possible. */
  uids(): Set<string> {
    return new Set(this.candidates.map((c) => c.uid));
  }

  /** Whether a uid is known deleted. */
  isGone(uid: string): boolean {
    return this.gone.has(uid);
  }

  get empty(): boolean {
    return this.candidates.length === 0;
  }

  /** The object as the stream or an answer showed it; false when it told nothing new. */
  observe(object: T, source: Source, received = nextSeq()): boolean {
    const uid = uidOf(object);
    const rv = rvOf(object);
    if (this.gone.has(uid)) return false; // older than its deletion
    if (source.from === 'stream') return this.streamed(object, uid, rv, received);
    if (this.passedByStream(uid, rv)) return false;
    const sent = source.sent;
    // This very state, known already, stays as it was learnt (its place in the stream).
    const same = this.candidates.find((c) => c.uid === uid && c.rv === rv);
    const pruned = this.supersede(sent, uid, same);
    for (const p of this.points)
      if (!p.moved && sent > p.knownAt && (uid !== p.uid || rv !== p.rv)) p.moved = true;
    if (same) return pruned;
    this.candidates.push({ object, uid, rv, stream: false, received });
    return true;
  }

  /** A re-list of the watch: an answer, and the stream's new starting point. */
  relisted(object: T, sent: number, received = nextSeq()): boolean {
    const uid = uidOf(object);
    const rv = rvOf(object);
    if (this.gone.has(uid)) return false;
    const same = this.candidates.find((c) => c.uid === uid && c.rv === rv && c.stream);
    const pruned = this.supersede(sent, uid, same);
    if (same) return pruned;
    return this.streamed(object, uid, rv, received, false) || pruned;
  }

  /**
   * The object of `uid` was deleted (a stream deletion, a precondition's 404,
   * a list without it): every state of it is gone for good.
   */
  deleted(uid: string): boolean {
    const before = this.candidates.length;
    this.gone.add(uid);
    this.candidates = this.candidates.filter((c) => c.uid !== uid);
    for (const p of this.points) if (p.uid === uid) p.moved = true;
    return this.candidates.length !== before;
  }

  /**
   * An answer to a request sent at `sent` shows the name held by another uid
   * (`uid`), or by none: every state received before is older, and a uid it
   * no longer shows is deleted.
   */
  supersede(sent: number, uid?: string, keep?: Candidate<T>): boolean {
    const older = this.candidates.filter((c) => c.received < sent && c !== keep);
    if (older.length === 0) return false;
    this.candidates = this.candidates.filter((c) => !older.includes(c));
    for (const c of older)
      if (c.uid !== uid && !this.candidates.some((k) => k.uid === c.uid)) this.deleted(c.uid);
    for (const p of this.points) if (!p.moved && p.uid !== uid && sent > p.knownAt) p.moved = true;
    return true;
  }

  /** Waits for the object to move past `rv` (of `uid`), known since `knownAt`. */
  track(uid: string, rv: string, knownAt: number): MovePoint {
    const key = `${uid}/${rv}`;
    const at = this.tail.lastIndexOf(key);
    const point: MovePoint = {
      uid,
      rv,
      knownAt,
      streamAt: at >= 0,
      moved: this.gone.has(uid) || (at >= 0 && at < this.tail.length - 1),
    };
    if (!point.moved) this.points.add(point);
    return point;
  }

  untrack(point: MovePoint): void {
    this.points.delete(point);
  }

  /** The received stamp of the latest state (what a write based on it is known since). */
  latestReceived(): number {
    let at = 0;
    for (const c of this.candidates) at = Math.max(at, c.received);
    return at;
  }

  /**
   * The stream showed another object of this name (`uid`): what it showed
   * before is older, and a uid it showed before, of which no answer knows a
   * later state, was deleted before (a name holds one object at a time).
   */
  streamMovedOn(uid: string): boolean {
    const older = this.candidates.filter((c) => c.stream && c.uid !== uid);
    if (older.length === 0) return false;
    this.candidates = this.candidates.filter((c) => !older.includes(c));
    for (const c of older) if (!this.candidates.some((k) => k.uid === c.uid)) this.deleted(c.uid);
    return true;
  }

  private streamed(object: T, uid: string, rv: string, received: number, event = true): boolean {
    const key = `${uid}/${rv}`;
    // An event of a state the stream delivered before is this one, or an older one replayed.
    if (event && this.tail.includes(key)) return false;
    this.streamMovedOn(uid);
    // Earlier stream states are older; an answer showing this very state is this one.
    this.candidates = this.candidates.filter((c) => !c.stream && !(c.uid === uid && c.rv === rv));
    this.candidates.push({ object, uid, rv, stream: true, received });
    this.tail.push(key);
    if (this.tail.length > STREAM_TAIL) this.tail.shift();
    for (const p of this.points) {
      if (p.moved) continue;
      if (p.uid === uid && p.rv === rv) p.streamAt = true;
      else if (p.streamAt) p.moved = true;
    }
    return true;
  }

  /** The stream delivered this state and went on since: an answer showing it is older. */
  private passedByStream(uid: string, rv: string): boolean {
    const at = this.tail.lastIndexOf(`${uid}/${rv}`);
    return at >= 0 && at < this.tail.length - 1;
  }
}
