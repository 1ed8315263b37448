// `--release-delay auto`: the product's adaptive scale-down policy, a pure
// function of the node's observed history (levels.ts) and the time.
//
// - A lower target: every pool level between it and the request is kept or
//   let go on its own record of gaps (keep-alive.ts: keep it when, on the
//   gaps seen, waiting for its reuse costs less idle than a release cycle
//   costs in writes and churn).
// - Letting go waits, at most two writes' worth of idle IPs, while the level
//   at the target is likely to be let go too, so levels that fall one after
//   the other go in one write.
// - A higher target is applied at once, and reaches the levels above it that
//   are likely to be needed within a write's worth of idle time: a wave that
//   climbs through several levels costs one write, not one per level.
// - A write that only drops stale ids from ipsNotInUse rides along with the
//   next write (within 5 minutes).
// - A level is not let go while its record says it may be needed again
//   before the release's round is over: the control plane works a node one
//   round at a time, so a release under way would hold that rise back by
//   the rest of its round (docs/decisions/0034), where CNS v2, which let the
//   level go when the target fell, rises at once.
// Costs are in IP-seconds of one idle IP; docs/decisions/0021 has the
// alternatives measured and how the defaults were chosen.
import type { PoolPolicy, PolicyDecision, PolicyView, RiseLikely } from '../policy.ts';
import { keepAlive, reuseWithin } from './keep-alive.ts';
import { emptyLevels, levelsBetween, observeLevels, type LevelsMemory } from './levels.ts';

export interface AutoOptions {
  /** What one NNC write costs, in IP-seconds. */
  writeCost: number;
  /** What one IP allocated or released costs, in IP-seconds. */
  churnCost: number;
  /** NNC writes a release cycle costs: the release and the re-acquire (the stale-id clear rides along). */
  writesPerCycle: number;
  /** Pseudo-gaps longer than any recorded: the chance that this gap is unlike the record. */
  unseenGaps: number;
  /** A recorded gap g stands for gaps up to g * (1 + gapSlack). */
  gapSlack: number;
  /** Letting go waits for the next level at most this many writes' worth of idle IP-seconds. */
  aggregateWrites: number;
  /** Reach above the target to levels at least this likely to be needed soon. */
  reachShare: number;
  /** A write that only drops stale ids waits at most this long for the next write (ms). */
  staleClearMs: number;
  /**
   * A release is not started while a level it lets go may be needed again
   * within this many round times (and ROUND_MARGIN_MS) of the control plane.
   */
  roundsAtRisk: number;
}

/** Added to the rounds at risk: the write window and the control plane's pick-up. */
export const ROUND_MARGIN_MS = 1_000;

export const AUTO_DEFAULTS: Readonly<AutoOptions> = {
  writeCost: 300,
  churnCost: 15,
  writesPerCycle: 2,
  unseenGaps: 3,
  gapSlack: 0.1,
  aggregateWrites: 2,
  reachShare: 0.5,
  staleClearMs: 300_000,
  roundsAtRisk: 1.1,
};

/** One level's part in the current hold-back, for /debug/pool. */
export interface KeptLevel {
  level: number;
  /** Seconds since the target fell below it. */
  unusedSeconds: number;
  /** Recorded gaps longer than the current one. */
  evidence: number;
  /** Gaps recorded for the level. */
  gaps: number;
}

export function cycleCost(o: AutoOptions, ips: number): number {
  return o.writesPerCycle * o.writeCost + 2 * ips * o.churnCost;
}

export function autoPolicy(options: Partial<AutoOptions> = {}): PoolPolicy<LevelsMemory> {
  const o: AutoOptions = { ...AUTO_DEFAULTS, ...options };
  return {
    name: 'auto',
    staleClearMs: o.staleClearMs,
    initial: emptyLevels,
    observe: observeLevels,
    decide: (m, v) => decideAuto(m, v, o),
  };
}

export function decideAuto(m: LevelsMemory, v: PolicyView, o: AutoOptions): PolicyDecision {
  if (v.target > v.request) return reach(m, v, o);
  if (v.target === v.request) return { applied: v.target, deferred: false };
  // A hold above the target is the inner policy's or a followed delay's
  // (idle-budget.ts): either way the budget's guard plans by the next rise.
  const d = release(m, v, o);
  if (!(v.roundMs !== undefined && v.roundMs > 0)) return d;
  const rise = riseLikely(m, v.target, v.now, o, v.roundMs * o.roundsAtRisk + ROUND_MARGIN_MS);
  return rise !== undefined ? { ...d, riseLikely: rise } : d;
}

/** A lower target: what of the request to keep, level by level, and what to let go (now or soon). */
function release(m: LevelsMemory, v: PolicyView, o: AutoOptions): PolicyDecision {
  const { target, request, now } = v;
  let keepTo = target;
  let recheckAt: number | undefined;
  let below = target;
  const kept: KeptLevel[] = [];
  for (const [level, mem] of levelsBetween(m, target, request)) {
    const ips = level - below;
    below = level;
    if (mem.since === undefined) continue;
    const age = now - mem.since;
    const choice = keepAlive(mem.gaps, age, ips, cycleCost(o, ips), o.unseenGaps, o.gapSlack);
    if (!choice.keep) continue;
    keepTo = level;
    kept.push({
      level,
      unusedSeconds: Math.round(age / 1000),
      evidence: choice.survivors,
      gaps: mem.gaps.length,
    });
    const at = mem.since + (choice.recheckAge ?? 0);
    recheckAt = recheckAt === undefined ? at : Math.min(recheckAt, at);
  }
  const budget = o.aggregateWrites * o.writeCost;
  const ready = releaseReady(m, keepTo, request, now, budget);
  const letsGo = ready.at === undefined || !nextFallsSoon(m, keepTo, target, now, ready.at - now);
  const risk = letsGo && keepTo < request ? waitRisk(m, keepTo, now, v.roundMs, o) : undefined;
  if (risk !== undefined) {
    return {
      applied: request,
      deferred: true,
      recheckAt: risk.until,
      why: {
        policy: 'auto',
        summary:
          `keeping ${request} for the target ${target} until ${new Date(risk.until).toISOString()}: ` +
          'demand came back above it after gaps ending about now, and a release under way would ' +
          'hold that rise back by the rest of its round',
        riseLikely: risk,
        kept,
      },
    };
  }
  if (!letsGo && ready.at !== undefined) {
    return {
      applied: request,
      deferred: true,
      recheckAt: recheckAt === undefined ? ready.at : Math.min(recheckAt, ready.at),
      why: {
        policy: 'auto',
        summary:
          `letting ${request - keepTo} IPs go (to ${keepTo}, target ${target}) once they have idled ` +
          `${budget} IP-s or the level ${target} is let go too: it usually is soon`,
        idledIpSeconds: Math.round(ready.idled),
        kept,
      },
    };
  }
  if (keepTo <= target) return { applied: target, deferred: false };
  return {
    applied: keepTo,
    deferred: true,
    ...(recheckAt !== undefined ? { recheckAt } : {}),
    why: {
      policy: 'auto',
      summary:
        `keeping ${keepTo} for the target ${target}: level${kept.length > 1 ? 's' : ''} ` +
        `${kept.map((k) => k.level).join(', ')} came back after gaps like the current one, ` +
        'cheaper to keep than to release and re-acquire',
      kept,
    },
  };
}

/**
 * When demand is next likely to come back above `above` (a level the pool
 * would keep), from the record of every level above it that is not needed
 * now: each recorded gap g says the level came back g after it was let go,
 * so one like it brings it back within g x (1 -+ gapSlack) of its `since`,
 * or `tailMs` later (a gap a little longer than any seen: a release started
 * as the record runs out is the one most likely to meet the rise).
 * The first such span not over by `now`, joined with those that begin
 * before it ends; undefined when no level above has a gap still to come.
 */
export function riseLikely(
  m: LevelsMemory,
  above: number,
  now: number,
  o: Pick<AutoOptions, 'gapSlack'>,
  tailMs = 0,
): RiseLikely | undefined {
  const spans: RiseLikely[] = [];
  for (const [, mem] of levelsBetween(m, above, Number.POSITIVE_INFINITY)) {
    if (mem.since === undefined) continue;
    for (const g of mem.gaps) {
      const until = mem.since + g * (1 + o.gapSlack) + tailMs;
      if (until > now) spans.push({ from: Math.max(now, mem.since + g * (1 - o.gapSlack)), until });
    }
  }
  if (spans.length === 0) return undefined;
  spans.sort((a, b) => a.from - b.from);
  const first = { ...spans[0]! };
  for (const s of spans) if (s.from <= first.until) first.until = Math.max(first.until, s.until);
  return first;
}

/**
 * When the target is next likely to fall below `upTo` (the level kept), from
 * the record of how long each level at or below it that is needed now stays
 * needed (its busy times), as riseLikely reads the gaps.
 */
export function fallLikely(
  m: LevelsMemory,
  upTo: number,
  now: number,
  o: Pick<AutoOptions, 'gapSlack'>,
  tailMs = 0,
): RiseLikely | undefined {
  let first: RiseLikely | undefined;
  for (const [, mem] of levelsBetween(m, Number.NEGATIVE_INFINITY, upTo)) {
    if (mem.neededSince === undefined) continue;
    for (const b of mem.busy) {
      const until = mem.neededSince + b * (1 + o.gapSlack) + tailMs;
      const from = Math.max(now, mem.neededSince + b * (1 - o.gapSlack));
      if (until > now && (first === undefined || from < first.from)) first = { from, until };
    }
  }
  return first;
}

/**
 * A release started now, after the target fell (CNS v2 released then), must
 * be over before demand comes back above what it keeps, or the rise waits
 * for the rest of its round where CNS v2's starts at once. At risk while a
 * rise above `keepTo` is likely (riseLikely) within `roundsAtRisk` rounds
 * (and ROUND_MARGIN_MS) of now: the span of it. Undefined when none is,
 * when the round's time is not known, or when the target fell only now
 * (CNS v2's release is started now too).
 */
export function waitRisk(
  m: LevelsMemory,
  keepTo: number,
  now: number,
  roundMs: number | undefined,
  o: Pick<AutoOptions, 'roundsAtRisk' | 'gapSlack'>,
): RiseLikely | undefined {
  if (!(roundMs !== undefined && roundMs > 0)) return undefined;
  const first = levelsBetween(m, keepTo, Number.POSITIVE_INFINITY)[0];
  if (first?.[1].since === undefined || !(now > first[1].since)) return undefined;
  const horizon = roundMs * o.roundsAtRisk + ROUND_MARGIN_MS;
  const rise = riseLikely(m, keepTo, now, o, horizon);
  if (rise !== undefined && rise.from <= now + horizon) return rise;
  // A fall of the target meanwhile would wait for this round too: CNS v2's
  // release of it starts at once, ours a round later, and the rise after it
  // would find ours still under way.
  const fall = fallLikely(m, keepTo, now, o, horizon);
  return fall !== undefined && fall.from <= now + horizon ? fall : undefined;
}

/** A scale-up: the target, and the levels above it likely to be needed within a write's worth of idle time. */
function reach(m: LevelsMemory, v: PolicyView, o: AutoOptions): PolicyDecision {
  let applied = v.target;
  let below = v.target;
  for (const [level, mem] of levelsBetween(m, v.target, v.scaler.max)) {
    const ips = level - below;
    below = level;
    if (mem.since === undefined) break;
    const horizonMs = (o.writeCost / Math.max(1, ips)) * 1000;
    if (reuseWithin(mem.gaps, v.now - mem.since, horizonMs) < o.reachShare) break;
    applied = level;
  }
  // Only what the next look keeps: a reach it let go at once would be two
  // writes where following the target makes one.
  if (applied > v.target) {
    applied = Math.max(
      v.target,
      Math.min(applied, release(m, { ...v, request: applied }, o).applied),
    );
  }
  if (applied === v.target) return { applied, deferred: false };
  return {
    applied,
    deferred: false,
    why: {
      policy: 'auto',
      summary:
        `reaching ${applied} for the target ${v.target}: the levels above it were needed again ` +
        'soon after gaps like the current one',
    },
  };
}

/**
 * IPs in (keepTo, request] have been unused since their levels' gaps began;
 * once together they have idled `budget` IP-seconds, letting them go is worth
 * its write whatever follows. `at` is when that will be (absent: now).
 */
export function releaseReady(
  m: LevelsMemory,
  keepTo: number,
  request: number,
  now: number,
  budget: number,
): { idled: number; at?: number } {
  let idled = 0;
  let rate = 0;
  let below = keepTo;
  for (const [level, mem] of levelsBetween(m, keepTo, request)) {
    const ips = level - below;
    below = level;
    if (mem.since === undefined) return { idled: Number.POSITIVE_INFINITY };
    idled += (ips * Math.max(0, now - mem.since)) / 1000;
    rate += ips;
  }
  // Above the highest level remembered: unused for longer than memory goes back.
  if (below < request) return { idled: Number.POSITIVE_INFINITY };
  if (idled >= budget || rate === 0) return { idled };
  return { idled, at: now + ((budget - idled) / rate) * 1000 };
}

/**
 * Whether the level at the target, needed now, is likely to be let go within
 * `withinMs` as well (on its record of how long it stays needed), so that
 * waiting puts both in one write.
 */
function nextFallsSoon(
  m: LevelsMemory,
  keepTo: number,
  target: number,
  now: number,
  withinMs: number,
): boolean {
  if (keepTo !== target) return false;
  const level = m.levels.get(keepTo);
  if (level?.neededSince === undefined) return false;
  return reuseWithin(level.busy, now - level.neededSince, withinMs) >= 0.5;
}
