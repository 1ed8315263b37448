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
// CNS v2's pool follows its request through the same control plane as
// ours: a write shows in the status only after a fulfilment lag. The lag is
// measured live, on the pool's own scale-ups (both apply a higher target at
// once): from the target's last rise above what the status holds to the
// status holding it. CNS v2's status is modelled so: each of its writes is
// fulfilled after the lag with what it wrote (a control plane reads the spec
// when it starts on a write): a rise adds IPs up to its request, a release
// takes away the IPs it marked. A rise reversed within the lag is still
// fulfilled, and the surplus released by a write of its own. Until a lag is
// measured its writes show at once. Observations without `allocated`
// (history replayed at start) move the clock but are not counted: the
// account starts live.
import type { Observation } from '../policy.ts';

export const WINDOW_MS = 24 * 3_600_000;
export const BUCKETS = 24;
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
   * lag with what it wrote.
   */
  cnsWrites: number;
  cnsChurn: number;
  /** The pool's own IP churn (IPs the status gained plus lost). */
  heldChurn: number;
  /** The control plane's fulfilment lag (ms), as last measured on a scale-up; 0 until then. */
  lagMs: number;
  /** Since when the target has been above what the status holds (a scale-up being fulfilled). */
  risingSince?: number;
  /** CNS v2's request as last written, when, and whether a change waits for its write window. */
  cnsRequest?: number;
  cnsWriteAt?: number;
  cnsPending: boolean;
  /** CNS v2's status (IPs held), and its writes awaiting fulfilment (ascending, bounded). */
  cnsStatus?: number;
  cnsFulfils: CnsFulfilment[];
}

/** A CNS v2 write awaiting fulfilment: when, the request it wrote, and how many IPs it marked for release. */
export interface CnsFulfilment {
  at: number;
  request: number;
  releases: number;
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
    lagMs: 0,
    cnsPending: false,
    cnsFulfils: [],
  };
}

/** CNS v2 writes awaiting fulfilment, at most (older ones are dropped: their fulfilment is lost). */
export const MAX_PENDING_FULFILS = 64;

/** Idle IPs per second now (until the next change): the pool's and CNS v2's (0, 0 while not counting). */
export function idleRates(a: IdleAccount): IdleTotals {
  if (a.allocated === undefined) return { held: 0, cns: 0 };
  return {
    held: Math.max(0, a.allocated - a.demand),
    // Until a lag is measured CNS v2's writes show at once: its rise is then
    // capped at what the pool holds (both wait for the same control plane).
    cns: Math.max(
      0,
      (a.lagMs > 0
        ? (a.cnsStatus ?? a.allocated)
        : Math.min(a.cnsStatus ?? a.allocated, a.allocated)) - a.demand,
    ),
  };
}

function bucketStart(t: number): number {
  return Math.floor(t / BUCKET_MS) * BUCKET_MS;
}

/**
 * The account integrated up to `to` (ms); a new object. Between observations
 * only CNS v2 moves: a write its window held goes out, a write is fulfilled.
 * At most MAX_PENDING_FULFILS + 1 such events, each integrated up to.
 */
export function advanceAccount(a: IdleAccount, to: number, fulfilAtTo = true): IdleAccount {
  const from = a.at;
  if (from === undefined) {
    // A resumed account (carried.ts): buckets that left the window while it was down go.
    const oldest = bucketStart(to) - (BUCKETS - 1) * BUCKET_MS;
    return { ...a, at: to, buckets: a.buckets.filter((b) => b.start >= oldest) };
  }
  if (!(to > from)) return a;
  let next = a;
  for (let t = from; t < to;) {
    const event = Math.min(to, nextCnsEvent(next, t));
    next = integrate(next, t, event);
    t = event;
    next = settleCnsWrite(next, t);
    if (t < to || fulfilAtTo) next = fulfilCns(next, t);
  }
  // Buckets that left the window go, whether or not anything was counted since.
  const oldest = bucketStart(to) - (BUCKETS - 1) * BUCKET_MS;
  return { ...next, at: to, buckets: next.buckets.filter((b) => b.start >= oldest) };
}

/** When after `t` CNS v2 next moves by itself (Infinity: not before an observation). */
function nextCnsEvent(a: IdleAccount, t: number): number {
  const due =
    a.cnsPending && a.cnsWriteAt !== undefined ? [a.cnsWriteAt + CNS_WRITE_WINDOW_MS] : [];
  const fulfils = a.cnsFulfils.map((f) => f.at);
  return Math.min(...[...due, ...fulfils].filter((e) => e > t), Number.POSITIVE_INFINITY);
}

/** Adds [from, to) at the account's current rates to its totals and buckets. */
function integrate(acc: IdleAccount, from: number, to: number): IdleAccount {
  const rate = idleRates(acc);
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

/**
 * CNS v2's writes due by `to` are fulfilled, in order, each with what it
 * wrote: the IPs it marked leave, and the status grows to its request. A
 * status left above CNS v2's request (a rise fulfilled after the target fell
 * back) is released by a write of its own, as its monitor would. Its churn
 * is counted only once a lag is measured; before, the pool's own stands for
 * it (observeAccount).
 */
function fulfilCns(a: IdleAccount, to: number): IdleAccount {
  const due = a.cnsFulfils.filter((f) => f.at <= to);
  const request = a.cnsRequest;
  if (due.length === 0 || request === undefined) return a;
  let status = a.cnsStatus ?? request;
  let churned = 0;
  for (const f of due) {
    const after = Math.max(f.request, status - f.releases);
    churned += Math.abs(after - status);
    status = after;
  }
  const next: IdleAccount = {
    ...a,
    cnsChurn: a.cnsChurn + (a.lagMs > 0 ? churned : 0),
    cnsStatus: status,
    cnsFulfils: a.cnsFulfils.filter((f) => f.at > to),
  };
  const surplus = status - markedForRelease(next) - request;
  if (surplus <= 0 || next.cnsPending) return next;
  const released = cnsWrite(next, to, surplus);
  // With no lag measured a write is fulfilled at once.
  return a.lagMs > 0 ? released : fulfilCns(released, to);
}

/** IPs CNS v2's writes still awaiting fulfilment have marked for release. */
function markedForRelease(a: IdleAccount): number {
  return a.cnsFulfils.reduce((sum, f) => sum + f.releases, 0);
}

/** A CNS v2 write held by its write window goes out when the window ends (if still a change). */
function settleCnsWrite(a: IdleAccount, to: number): IdleAccount {
  if (!a.cnsPending || a.cnsWriteAt === undefined) return a;
  const due = a.cnsWriteAt + CNS_WRITE_WINDOW_MS;
  if (to < due) return a;
  if (a.target === a.cnsRequest) return { ...a, cnsPending: false };
  return cnsWrite({ ...a, cnsPending: false }, due);
}

/**
 * A CNS v2 write of its target at `at`. A release marks what the status
 * holds above the target and not marked already (`surplus`: given when the
 * target did not move, for a rise fulfilled after it fell back).
 */
function cnsWrite(a: IdleAccount, at: number, surplus?: number): IdleAccount {
  const status = a.cnsStatus ?? a.cnsRequest ?? a.target;
  const releases = surplus ?? Math.max(0, status - markedForRelease(a) - a.target);
  // A release is a second write later: the released ids leave ipsNotInUse once the status drops them.
  return {
    ...a,
    cnsWrites: a.cnsWrites + (releases > 0 ? 2 : 1),
    cnsRequest: a.target,
    cnsWriteAt: at,
    cnsFulfils: [...a.cnsFulfils, { at: at + a.lagMs, request: a.target, releases }].slice(
      -MAX_PENDING_FULFILS,
    ),
  };
}

/**
 * The account after one more observation. A CNS v2 write due at this very
 * moment is fulfilled after it: until then CNS v2's status is the one
 * before, the reading that never credits CNS v2 with idle IPs it might not
 * hold yet.
 */
export function observeAccount(a: IdleAccount, o: Observation): IdleAccount {
  return fulfilCns(observed(advanceAccount(a, o.at, false), o), o.at);
}

function observed(advanced: IdleAccount, o: Observation): IdleAccount {
  const live = o.allocated !== undefined && Number.isFinite(o.allocated);
  if (!live) {
    // Not counted (replayed history): the clock moves, the rates stop.
    const { allocated: _gone, ...rest } = advanced;
    return { ...rest, demand: o.demand, target: o.target };
  }
  const allocated = o.allocated as number;
  const { risingSince: _was, ...base } = advanced;
  const churned = advanced.allocated === undefined ? 0 : Math.abs(allocated - advanced.allocated);
  let next: IdleAccount = {
    ...base,
    ...fulfilment(advanced, o.at, o.target, allocated),
    demand: o.demand,
    target: o.target,
    allocated,
    since: advanced.since ?? o.at,
    heldChurn: advanced.heldChurn + churned,
    // Until a lag is measured the model cannot tell a spike CNS v2 would
    // reverse unfulfilled from one it would be given; both pools go through
    // the same control plane and rise alike, so the pool's churn stands for it.
    cnsChurn: advanced.cnsChurn + (advanced.lagMs > 0 ? 0 : churned),
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
    // Only a status that grew to the target measures the lag: a target that
    // fell back below the status is a rise cancelled, and its short "lag"
    // would have CNS v2's spikes fulfilled (and churned) before they are
    // reversed.
    const grew = a.allocated !== undefined && allocated > a.allocated;
    const lagMs = a.risingSince === undefined || !grew ? a.lagMs : at - a.risingSince;
    return { lagMs };
  }
  const rose = a.risingSince === undefined || target > a.target;
  return { lagMs: a.lagMs, risingSince: rose ? at : (a.risingSince as number) };
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
