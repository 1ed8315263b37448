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
// Costs are in IP-seconds of one idle IP; docs/decisions/0021 has the
// alternatives measured and how the defaults were chosen.
import type { PoolPolicy, PolicyDecision, PolicyView } from '../policy.ts';
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
}

export const AUTO_DEFAULTS: Readonly<AutoOptions> = {
  writeCost: 300,
  churnCost: 15,
  writesPerCycle: 2,
  unseenGaps: 3,
  gapSlack: 0.1,
  aggregateWrites: 2,
  reachShare: 0.5,
  staleClearMs: 300_000,
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
  return release(m, v, o);
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
  if (ready.at !== undefined && nextFallsSoon(m, keepTo, target, now, ready.at - now)) {
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
