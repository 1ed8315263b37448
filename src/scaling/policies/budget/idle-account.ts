// The idle account of a pool policy against CNS v2, kept live from the same
// observations the policy sees. CNS v2's target is a pure function of demand
// (and the scaler), so what CNS v2 would have held is known at every moment:
// its idle IPs are target - demand. The pool's own idle IPs are the IPs the
// NNC status holds minus demand. Both are integrated exactly (each value
// holds until the next observation) since start and over a rolling window
// of fixed buckets, and CNS v2's NNC writes and IP churn are counted as its
// monitor would make them (one write per target change, spaced by its write
// window). Pure and bounded: a fixed number of buckets, O(buckets) per event.
//
// CNS v2's pool follows its target through the same control plane as ours:
// a higher target shows in the status only after a fulfilment lag, and so
// does a lower one. The lag is measured live, on the pool's own scale-ups
// (both apply a higher target at once): from the target rising above what
// the status holds to the status holding it. So what CNS v2 would hold is
// the highest target of the last lag (a release shows after the lag),
// capped at what the node holds (a scale-up lag both would see is charged
// to neither). Observations without `allocated` (history replayed at start)
// move the clock but are not counted: the account starts live.
import type { Observation } from '../policy.ts';

export const WINDOW_MS = 3_600_000;
export const BUCKETS = 12;
export const BUCKET_MS = WINDOW_MS / BUCKETS;
/** CNS v2 writes a request change at once unless it wrote less than this ago (monitor's write window). */
export const CNS_WRITE_WINDOW_MS = 500;

export interface IdleTotals {
  /** Idle IP-seconds of the pool as held. */
  held: number;
  /** Idle IP-seconds CNS v2 would have held. */
  cns: number;
}

export interface IdleBucket extends IdleTotals {
  /** Start (ms) of the bucket, a multiple of BUCKET_MS. */
  start: number;
}

export interface IdleAccount {
  /** Integrated up to here (ms). */
  at?: number;
  /** First time counted (ms); absent until a live observation. */
  since?: number;
  demand: number;
  target: number;
  /** IPs the NNC status holds; absent: not counting. */
  allocated?: number;
  total: IdleTotals;
  /** The window's buckets, oldest first, at most BUCKETS. */
  buckets: IdleBucket[];
  /**
   * CNS v2's NNC writes as its monitor would make them, and its IP churn
   * (IPs its status gains plus loses): each write is fulfilled after the
   * lag with the request as it is then, so a change reversed within the lag
   * churns nothing.
   */
  cnsWrites: number;
  cnsChurn: number;
  /** The pool's own IP churn (IPs the status gained plus lost). */
  heldChurn: number;
  /** The target fell at its last change (it has not risen since). */
  falling: boolean;
  /** The control plane's fulfilment lag (ms), as last measured on a scale-up; 0 until then. */
  lagMs: number;
  /** Since when the target has been above what the status holds (a scale-up being fulfilled). */
  risingSince?: number;
  /** Targets of the last lag, newest last: CNS v2 holds the highest of them (bounded). */
  recent: Array<{ at: number; target: number }>;
  /** CNS v2's request as last written, when, and whether a change waits for its write window. */
  cnsRequest?: number;
  cnsWriteAt?: number;
  cnsPending: boolean;
  /** CNS v2's status (IPs held), and when its writes are fulfilled (ascending, bounded). */
  cnsStatus?: number;
  cnsFulfils: number[];
}

export function emptyAccount(): IdleAccount {
  return {
    demand: 0,
    target: 0,
    total: { held: 0, cns: 0 },
    buckets: [],
    cnsWrites: 0,
    cnsChurn: 0,
    heldChurn: 0,
    falling: false,
    lagMs: 0,
    recent: [],
    cnsPending: false,
    cnsFulfils: [],
  };
}

export const MAX_RECENT_TARGETS = 64;

/** The highest target CNS v2 still holds at `t`: its release shows after the lag. */
function cnsLevel(a: IdleAccount, t: number): number {
  let level = a.target;
  for (const r of a.recent) if (r.at + a.lagMs > t) level = Math.max(level, r.target);
  return level;
}

/** When, after `t` and before `to`, the level CNS v2 holds next changes by itself (a release showing). */
function nextRelease(a: IdleAccount, t: number, to: number): number {
  let next = to;
  for (const r of a.recent) {
    const ends = r.at + a.lagMs;
    if (ends > t && ends < next) next = ends;
  }
  return next;
}

/** Idle IPs per second at `t` (until the next change): the pool's and CNS v2's (0, 0 while not counting). */
export function idleRates(a: IdleAccount, t = a.at ?? 0): IdleTotals {
  if (a.allocated === undefined) return { held: 0, cns: 0 };
  return {
    held: Math.max(0, a.allocated - a.demand),
    cns: Math.max(0, Math.min(cnsLevel(a, t), a.allocated) - a.demand),
  };
}

function bucketStart(t: number): number {
  return Math.floor(t / BUCKET_MS) * BUCKET_MS;
}

/** The account integrated up to `to` (ms) at the current rates; a new object. */
export function advanceAccount(a: IdleAccount, to: number): IdleAccount {
  const from = a.at;
  if (from === undefined || !(to > from)) return from === undefined ? { ...a, at: to } : a;
  let next = fulfilCns(settleCnsWrite(a, to), to);
  // Piecewise: CNS v2's level changes by itself where one of its releases shows.
  for (let t = from; t < to;) {
    const end = nextRelease(a, t, to);
    next = integrate(next, a, t, end);
    t = end;
  }
  const recent = a.recent.filter((r) => r.at + a.lagMs > to);
  // Buckets that left the window go, whether or not anything was counted since.
  const oldest = bucketStart(to) - (BUCKETS - 1) * BUCKET_MS;
  const buckets = next.buckets.filter((b) => b.start >= oldest);
  return { ...next, at: to, recent, buckets };
}

/** Adds [from, to) at the rates of `a` at `from` to the totals and buckets of `acc`. */
function integrate(acc: IdleAccount, a: IdleAccount, from: number, to: number): IdleAccount {
  const rate = idleRates(a, from);
  if (rate.held === 0 && rate.cns === 0) return acc;
  const seconds = (to - from) / 1000;
  const total = {
    held: acc.total.held + rate.held * seconds,
    cns: acc.total.cns + rate.cns * seconds,
  };
  // Only the buckets still in the window at `to` matter: at most BUCKETS of them.
  const oldest = bucketStart(to) - (BUCKETS - 1) * BUCKET_MS;
  const buckets = acc.buckets.filter((b) => b.start >= oldest).map((b) => ({ ...b }));
  for (let t = Math.max(from, oldest); t < to;) {
    const start = bucketStart(t);
    const end = Math.min(to, start + BUCKET_MS);
    const s = (end - t) / 1000;
    let last = buckets[buckets.length - 1];
    if (last?.start !== start) {
      last = { start, held: 0, cns: 0 };
      buckets.push(last);
    }
    last.held += rate.held * s;
    last.cns += rate.cns * s;
    t = end;
  }
  return { ...acc, total, buckets };
}

/** CNS v2's writes due by `to` are fulfilled: its status takes its request. */
function fulfilCns(a: IdleAccount, to: number): IdleAccount {
  const due = a.cnsFulfils.filter((t) => t <= to);
  if (due.length === 0 || a.cnsRequest === undefined) return a;
  const status = a.cnsStatus ?? a.cnsRequest;
  return {
    ...a,
    cnsChurn: a.cnsChurn + Math.abs(a.cnsRequest - status),
    cnsStatus: a.cnsRequest,
    cnsFulfils: a.cnsFulfils.filter((t) => t > to),
  };
}

/** A CNS v2 write held by its write window goes out when the window ends (if still a change). */
function settleCnsWrite(a: IdleAccount, to: number): IdleAccount {
  if (!a.cnsPending || a.cnsWriteAt === undefined) return a;
  const due = a.cnsWriteAt + CNS_WRITE_WINDOW_MS;
  if (to < due) return a;
  if (a.target === a.cnsRequest) return { ...a, cnsPending: false };
  return cnsWrite({ ...a, cnsPending: false }, due);
}

function cnsWrite(a: IdleAccount, at: number): IdleAccount {
  // A release is a second write later: the released ids leave ipsNotInUse once the status drops them.
  const releases = a.cnsRequest !== undefined && a.target < a.cnsRequest;
  return {
    ...a,
    cnsWrites: a.cnsWrites + (releases ? 2 : 1),
    cnsRequest: a.target,
    cnsWriteAt: at,
    cnsFulfils: [...a.cnsFulfils, at + a.lagMs].slice(-MAX_RECENT_TARGETS),
  };
}

/** The account after one more observation. */
export function observeAccount(a: IdleAccount, o: Observation): IdleAccount {
  const advanced = advanceAccount(a, o.at);
  const live = o.allocated !== undefined && Number.isFinite(o.allocated);
  if (!live) {
    // Not counted (replayed history): the clock moves, the rates stop.
    const { allocated: _gone, ...rest } = advanced;
    return { ...rest, demand: o.demand, target: o.target, falling: movedDown(advanced, o) };
  }
  const allocated = o.allocated as number;
  const fell = advanced.allocated !== undefined && o.target < advanced.target;
  const recent = fell
    ? [...advanced.recent, { at: o.at, target: advanced.target }].slice(-MAX_RECENT_TARGETS)
    : advanced.recent;
  const { risingSince: _was, ...base } = advanced;
  let next: IdleAccount = {
    ...base,
    ...fulfilment(advanced, o.at, o.target, allocated),
    recent,
    falling: movedDown(advanced, o),
    demand: o.demand,
    target: o.target,
    allocated,
    since: advanced.since ?? o.at,
    heldChurn:
      advanced.heldChurn +
      (advanced.allocated === undefined ? 0 : Math.abs(allocated - advanced.allocated)),
  };
  if (next.cnsRequest === undefined) {
    // CNS v2 starts where the pool starts.
    next = {
      ...next,
      cnsRequest: allocated,
      cnsStatus: allocated,
      cnsWriteAt: Number.NEGATIVE_INFINITY,
    };
  }
  if (next.target === next.cnsRequest || next.cnsPending) return next;
  const windowEnd = (next.cnsWriteAt ?? Number.NEGATIVE_INFINITY) + CNS_WRITE_WINDOW_MS;
  // A write with no lag (none measured yet) is fulfilled at once.
  return o.at >= windowEnd ? fulfilCns(cnsWrite(next, o.at), o.at) : { ...next, cnsPending: true };
}

/**
 * The lag measured when the status catches up with a higher target, from the
 * last rise of the target (the shorter lag: CNS v2's releases are not taken
 * to show later than they would).
 */
function fulfilment(
  a: IdleAccount,
  at: number,
  target: number,
  allocated: number,
): { lagMs: number; risingSince?: number } {
  if (allocated >= target) {
    const lagMs = a.risingSince === undefined ? a.lagMs : at - a.risingSince;
    return { lagMs };
  }
  const rose = a.risingSince === undefined || target > a.target;
  return { lagMs: a.lagMs, risingSince: rose ? at : (a.risingSince as number) };
}

function movedDown(a: IdleAccount, o: Observation): boolean {
  return o.target === a.target ? a.falling : o.target < a.target;
}

/** Idle IP-seconds in the rolling window ending at the account's time. */
export function windowTotals(a: IdleAccount): IdleTotals {
  return a.buckets.reduce((t, b) => ({ held: t.held + b.held, cns: t.cns + b.cns }), {
    held: 0,
    cns: 0,
  });
}

/**
 * IP-seconds the pool may still hold idle beyond CNS v2 within `ratio` (the
 * account advanced to now): the smaller of what is left since start and in
 * the window. In the window the oldest bucket's credit is not counted (it
 * leaves the window first), so the figure does not shrink by itself before
 * the next bucket begins.
 */
export function budgetLeft(a: IdleAccount, ratio: number): number {
  const sinceStart = ratio * a.total.cns - a.total.held;
  const oldest = a.at === undefined ? 0 : bucketStart(a.at) - (BUCKETS - 1) * BUCKET_MS;
  let window = 0;
  for (const b of a.buckets) {
    const net = ratio * b.cns - b.held;
    window += b.start <= oldest ? Math.min(0, net) : net;
  }
  return Math.min(sinceStart, window);
}

/** When the next bucket begins after `now` (ms): the window's budget is looked at again then. */
export function nextBucketAt(now: number): number {
  return bucketStart(now) + BUCKET_MS;
}
