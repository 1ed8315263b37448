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
// CNS v2's pool follows its request through the same control plane as ours,
// which works a node as the fulfiller does (src/fulfiller/queue.ts): one
// round at a time, the spec read when the round begins, a change meanwhile
// waiting for the next round. CNS v2's is modelled so: a round begins when
// its spec asks for something (IPs to add up to the request, or IPs marked
// for release) and none is under way, reads the request and the marks, and
// ends a round's time later; a rise reversed while a round is under way is
// then never fulfilled, and one fulfilled after the target fell back is
// released by a write of its own. A round's time is measured live on the
// pool's own rounds, which the account follows from what the pool's spec
// asks and its status holds: a round begins when the spec asks for work and
// none is under way, reads the request, and ends when the status changes.
// (Observations without the spec, from older callers, measure it on
// scale-ups: from the target's last rise above the status, or the status's
// last change, to the status holding the target.) Until a round is measured
// CNS v2's writes show at once. Observations without `allocated` (history replayed
// at start) move the clock but are not counted: the account starts live.
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
   * (IPs its status gains plus loses) as its rounds fulfil them.
   */
  cnsWrites: number;
  cnsChurn: number;
  /** The pool's own IP churn (IPs the status gained plus lost). */
  heldChurn: number;
  /** How long a round of the control plane takes (ms), as last measured on a scale-up; 0 until then. */
  lagMs: number;
  /** Since when the target has been above what the status holds (a scale-up being fulfilled). */
  risingSince?: number;
  /** When the pool's status last changed (a round ended). */
  statusAt?: number;
  /** The pool's own round under way as the account follows it: when it began and the request it read. */
  round?: OwnRound;
  /** Pods started (the demand's rises, summed) since the account began. */
  podsStarted?: number;
  /** The largest rise of demand seen at once (pods) in each of the last STEP_BUCKETS hourly buckets. */
  steps?: { start: number; largest: number }[];
  /** When the target last fell (CNS v2 released then). */
  fellAt?: number;
  /**
   * Pods that waited behind the pool's own release rounds begun later than
   * the target fell: for each, the most pods waiting for an IP while it was
   * under way.
   */
  heldBack?: number;
  /** CNS v2's request as last written, when, and whether a change waits for its write window. */
  cnsRequest?: number;
  cnsWriteAt?: number;
  cnsPending: boolean;
  /** CNS v2's status (IPs held). */
  cnsStatus?: number;
  /** IPs CNS v2's spec marks for release that its status still holds. */
  cnsMarked: number;
  /** CNS v2's round under way: when it ends, and the request and marks it read. */
  cnsRound?: CnsRound;
}

/** How many hourly buckets the largest rise of demand at once is kept for. */
export const STEP_BUCKETS = 2;

function recordStep(
  steps: readonly { start: number; largest: number }[],
  at: number,
  step: number,
): { start: number; largest: number }[] {
  const start = bucketStart(at);
  const kept = steps.filter((b) => b.start > start - STEP_BUCKETS * BUCKET_MS);
  const last = kept[kept.length - 1];
  if (last?.start === start) {
    return [...kept.slice(0, -1), { start, largest: Math.max(last.largest, step) }];
  }
  return [...kept, { start, largest: step }];
}

/** The largest rise of demand at once in the last STEP_BUCKETS hours (pods). */
export function largestStep(a: IdleAccount): number {
  const now = a.at ?? 0;
  return (a.steps ?? [])
    .filter((b) => b.start > bucketStart(now) - STEP_BUCKETS * BUCKET_MS)
    .reduce((m, b) => Math.max(m, b.largest), 0);
}

/** The pool's own round under way. */
export interface OwnRound {
  began: number;
  reads: number;
  /** It takes IPs away (the spec marked some when it began) ... */
  releases?: boolean;
  /** ... later than the target fell, when CNS v2's control plane had no such round to begin. */
  late?: boolean;
  /** The most pods waiting for an IP while it (a release) was under way. */
  heldBack?: number;
}

/** When the pool's own round under way ends (ms), at the round time measured; none without both. */
export function ownRoundEnd(a: IdleAccount): number | undefined {
  return a.round !== undefined && a.lagMs > 0 ? a.round.began + a.lagMs : undefined;
}

/**
 * A round the account takes to be under way is given up (it changed
 * nothing the account sees, as a release and a rise of the same size in one
 * round would) after this many round times, at least OWN_ROUND_GIVE_UP_MS.
 */
export const OWN_ROUND_GIVE_UP_ROUNDS = 3;
export const OWN_ROUND_GIVE_UP_MS = 30_000;
/**
 * Before any round is measured, longer than the slowest backend's round (a
 * scale-set VM's update, up to two minutes, seen at ARM's next poll): a
 * first round given up early would be measured from a later start, and the
 * account would take the control plane for faster than it is.
 */
export const FIRST_ROUND_GIVE_UP_MS = 150_000;

/** A round of CNS v2's control plane under way. */
export interface CnsRound {
  /** When it began: its request and marks were read then. */
  began: number;
  end: number;
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
    cnsMarked: 0,
  };
}

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
 * only CNS v2 moves: a write its window held goes out, a round ends (and the
 * next may begin), each integrated up to.
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
    if (t < to || fulfilAtTo) next = endCnsRound(next, t);
  }
  // Buckets that left the window go, whether or not anything was counted since.
  const oldest = bucketStart(to) - (BUCKETS - 1) * BUCKET_MS;
  return { ...next, at: to, buckets: next.buckets.filter((b) => b.start >= oldest) };
}

/** When after `t` CNS v2 next moves by itself (Infinity: not before an observation). */
function nextCnsEvent(a: IdleAccount, t: number): number {
  const due =
    a.cnsPending && a.cnsWriteAt !== undefined
      ? a.cnsWriteAt + CNS_WRITE_WINDOW_MS
      : Number.POSITIVE_INFINITY;
  const end = a.cnsRound?.end ?? Number.POSITIVE_INFINITY;
  return Math.min(...[due, end].filter((e) => e > t), Number.POSITIVE_INFINITY);
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
 * CNS v2's round due by `to` ends: the IPs it read as marked leave, and the
 * status grows to the request it read. A status left above CNS v2's request
 * (a rise fulfilled after the target fell back) is released by a write of
 * its own, as its monitor would. What the spec asks for beyond what the
 * round read begins the next round. Its churn is counted only once a lag is
 * measured; before, the pool's own stands for it (observeAccount).
 */
function endCnsRound(a: IdleAccount, to: number): IdleAccount {
  const round = a.cnsRound;
  if (round === undefined || round.end > to) return a;
  const { cnsRound: _done, ...rest } = a;
  return afterRound(rest, round, round.end);
}

/** CNS v2 after `round`, read from its spec when it began, has been fulfilled at `at`. */
function afterRound(
  a: IdleAccount,
  round: Pick<CnsRound, 'request' | 'releases'>,
  at: number,
): IdleAccount {
  const status = a.cnsStatus ?? round.request;
  const after = Math.max(round.request, status - round.releases);
  const next: IdleAccount = {
    ...a,
    cnsChurn: a.cnsChurn + (a.lagMs > 0 ? Math.abs(after - status) : 0),
    cnsStatus: after,
    cnsMarked: Math.max(0, a.cnsMarked - round.releases),
  };
  return surplusReleased(next, at);
}

/**
 * CNS v2 with a new status at `at`: what it holds above its request and has
 * not marked (a rise fulfilled after the target fell back) is released by a
 * write of its own, as its monitor would; else the next round begins if its
 * spec asks for one.
 */
function surplusReleased(a: IdleAccount, at: number): IdleAccount {
  const status = a.cnsStatus ?? 0;
  const surplus = status - a.cnsMarked - (a.cnsRequest ?? status);
  if (surplus > 0 && !a.cnsPending) return cnsWrite(a, at, surplus);
  return beginCnsRound(a, at);
}

/**
 * A CNS v2 round begins at `at` when none is under way and its spec asks
 * for something: IPs marked for release, or a request above the status.
 * With no lag measured yet it is fulfilled at once.
 */
function beginCnsRound(a: IdleAccount, at: number): IdleAccount {
  if (a.cnsRound !== undefined) return a;
  const status = a.cnsStatus ?? 0;
  const request = a.cnsRequest ?? status;
  if (a.cnsMarked <= 0 && status >= request) return a;
  const round = { request, releases: a.cnsMarked };
  if (!(a.lagMs > 0)) return afterRound(a, round, at);
  return { ...a, cnsRound: { ...round, began: at, end: at + a.lagMs } };
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
  const releases = surplus ?? Math.max(0, status - a.cnsMarked - a.target);
  // A release is a second write later: the released ids leave ipsNotInUse
  // once the status drops them (a round with nothing to do: it ends at once).
  return beginCnsRound(
    {
      ...a,
      cnsWrites: a.cnsWrites + (releases > 0 ? 2 : 1),
      cnsRequest: a.target,
      cnsWriteAt: at,
      cnsMarked: a.cnsMarked + releases,
    },
    at,
  );
}

/**
 * The account after one more observation. A CNS v2 round due at this very
 * moment ends after it: until then CNS v2's status is the one before, the
 * reading that never credits CNS v2 with idle IPs it might not hold yet.
 */
export function observeAccount(a: IdleAccount, o: Observation): IdleAccount {
  return endCnsRound(observed(advanceAccount(a, o.at, false), o), o.at);
}

function observed(advanced: IdleAccount, o: Observation): IdleAccount {
  const live = o.allocated !== undefined && Number.isFinite(o.allocated);
  if (!live) {
    // Not counted (replayed history): the clock moves, the rates stop.
    const { allocated: _gone, ...rest } = advanced;
    return { ...rest, demand: o.demand, target: o.target };
  }
  const allocated = o.allocated as number;
  const { risingSince: _was, round: _round, ...base } = advanced;
  const churned = advanced.allocated === undefined ? 0 : Math.abs(allocated - advanced.allocated);
  const changed = advanced.allocated !== undefined && allocated !== advanced.allocated;
  // The pods there when counting began arrived too (at once, as far as the account knows).
  const step =
    advanced.allocated === undefined ? o.demand : Math.max(0, o.demand - advanced.demand);
  let next: IdleAccount = {
    ...base,
    ...(o.requested !== undefined
      ? ownRound(advanced, o, allocated, changed)
      : fulfilment(advanced, o.at, o.target, allocated)),
    // The pods there when counting began were started too.
    podsStarted: (advanced.podsStarted ?? 0) + (advanced.allocated === undefined ? o.demand : step),
    steps: recordStep(advanced.steps ?? [], o.at, step),
    ...(o.target < advanced.target ? { fellAt: o.at } : {}),
    ...(changed ? { statusAt: o.at } : {}),
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
  if (!(advanced.lagMs > 0) && next.lagMs > 0) next = inStepWithPool(next, o);
  if (next.target === next.cnsRequest || next.cnsPending) return next;
  const windowEnd = (next.cnsWriteAt ?? Number.NEGATIVE_INFINITY) + CNS_WRITE_WINDOW_MS;
  return o.at >= windowEnd ? cnsWrite(next, o.at) : { ...next, cnsPending: true };
}

/**
 * The first round measured: until then CNS v2's writes showed at once, while
 * the control plane was in fact working a round. Both pools started alike on
 * the same control plane, so CNS v2 is taken to stand where the pool stands
 * (its status, its marks, its round under way), and from here its rounds
 * keep their own time. Left out of step, a model seconds out of phase stays
 * so wherever demand repeats at the rounds' own period (docs/decisions/0034).
 */
function inStepWithPool(a: IdleAccount, o: Observation): IdleAccount {
  const releases = o.releasing ?? 0;
  const { cnsRound: _model, ...rest } = a;
  const stepped: IdleAccount = {
    ...rest,
    cnsStatus: a.allocated,
    cnsMarked: releases,
    ...(a.round !== undefined
      ? {
          cnsRound: {
            began: a.round.began,
            end: a.round.began + a.lagMs,
            request: a.round.reads,
            releases,
          },
        }
      : {}),
  };
  return surplusReleased(stepped, o.at);
}

/**
 * The pool's own round, followed from its spec and status: one under way
 * ends when the status changes (its time measured), and one begins when the
 * spec asks for work (IPs marked for release, or a request above the
 * status) and none is under way.
 */
function ownRound(
  a: IdleAccount,
  o: Observation,
  allocated: number,
  changed: boolean,
): { lagMs: number; round?: OwnRound; heldBack?: number } {
  let lagMs = a.lagMs;
  let round = a.round;
  let heldBack = a.heldBack ?? 0;
  // A release round ends when its marked IPs leave the status, even if the
  // same round added as many (the count unchanged): else the next change
  // would measure two rounds as one.
  const released = round?.releases === true && (o.releasing ?? 0) === 0;
  if (round !== undefined && (changed || released)) {
    if (o.at > round.began) lagMs = o.at - round.began;
    heldBack += round.heldBack ?? 0;
    round = undefined;
  }
  const giveUp =
    lagMs > 0
      ? Math.max(OWN_ROUND_GIVE_UP_MS, OWN_ROUND_GIVE_UP_ROUNDS * lagMs)
      : FIRST_ROUND_GIVE_UP_MS;
  if (round !== undefined && o.at - round.began > giveUp) round = undefined;
  const requested = o.requested ?? allocated;
  const releasing = o.releasing ?? 0;
  const work = releasing > 0 || requested > allocated;
  if (round === undefined && work) {
    // A release begun within the write window of the target's fall is CNS v2's too.
    const fell = o.target < a.target ? o.at : (a.fellAt ?? Number.NEGATIVE_INFINITY);
    const late = o.at > fell + CNS_WRITE_WINDOW_MS;
    round = {
      began: o.at,
      reads: requested,
      ...(releasing > 0 ? { releases: true, ...(late ? { late: true } : {}) } : {}),
    };
  }
  if (round?.late === true && o.demand > allocated) {
    round = { ...round, heldBack: Math.max(round.heldBack ?? 0, o.demand - allocated) };
  }
  return {
    lagMs,
    ...(round !== undefined ? { round } : {}),
    ...(heldBack > 0 ? { heldBack } : {}),
  };
}

/**
 * A round's time, measured when the status catches up with a higher target:
 * from when the round that did it began, the target's last rise or the end
 * of the round before (a rise waits for the round under way), whichever is
 * later (the shorter time: CNS v2's releases are not taken to show later
 * than they would).
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
    const began = Math.max(a.risingSince ?? at, a.statusAt ?? Number.NEGATIVE_INFINITY);
    const lagMs = a.risingSince === undefined || !grew ? a.lagMs : at - began;
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
