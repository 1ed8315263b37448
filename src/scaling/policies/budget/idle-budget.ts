// `--idle-budget RATIO`: a promise on idle addresses wrapped around a
// release policy. The inner policy (auto) decides what is worth keeping to
// save writes and churn; this wrapper lets it keep IPs above the CNS v2
// target only while the pool's idle IP-seconds stay within RATIO x what CNS
// v2 would have held, since start and over the rolling window
// (idle-account.ts). Holding spends the budget at (held - demand) - RATIO x
// (target - demand) IP-s per second; following the target earns it back at
// (RATIO - 1) x (target - demand). When too little is left to hold through
// the release's own lag, it applies the target, as CNS v2 would, until the
// budget is earned back. Pure: memory and time in, decision out.
import {
  whyWith,
  type PoolPolicy,
  type PolicyDecision,
  type PolicyExplanation,
  type PolicyView,
} from '../policy.ts';
import { burstReach, observeLows, type DemandLows } from './burst-reach.ts';
import { carryAccount, resumeAccount, type CarriedAccount } from './carried.ts';
import type { DelayFigures, IdleAccountView } from './idle-account-view.ts';
import {
  advanceAccount,
  BUCKET_MS,
  budgetLeft,
  CNS_WRITE_WINDOW_MS,
  emptyAccount,
  largestStep,
  nextBucketAt,
  observeAccount,
  ownRoundEnd,
  windowTotals,
  WINDOW_MS,
  type IdleAccount,
} from './idle-account.ts';
import {
  advanceShadows,
  allowance,
  beyondBudget,
  CANDIDATE_DELAYS_SECONDS,
  chooseDelay,
  emptyShadows,
  fits,
  nextFall,
  observeShadows,
  PACE_BUCKETS,
  shadowRequest,
  windowIdle,
  type Allowance,
  type Pace,
  type Shadows,
} from './shadows.ts';

export { DEFAULT_IDLE_BUDGET } from '../../idle-budget-value.ts';
/**
 * Seconds a release takes to show in the status (write window plus the
 * control plane's fulfilment): held back from the budget so that a release
 * decided when the budget runs low still lands within it.
 */
export const RELEASE_LAG_SECONDS = 5;
/** Share of CNS v2's counted churn not credited (see churnSaved). */
export const CHURN_MODEL_MARGIN = 0.1;
/**
 * A round of the control plane longer than this can hold a rise back by more
 * than the wait promise allows (pod wait p99 within 0.5 s of CNS v2's): the
 * rules for a control plane that works one round at a time apply.
 */
export const ROUND_MATTERS_MS = 500;
/**
 * The pod wait promise is on the 99th percentile: a share of pods may wait
 * longer without moving it. Three quarters of that share is what holds with no record
 * of when demand comes back may risk (waitAllowance).
 */
export const WAIT_RISK_SHARE = 0.0075;
/** Rounds past the likely rise the budget must carry a hold begun on its record (waitGuarded). */
export const CARRY_MARGIN_ROUNDS = 3;
/** A reach above a rising target must be affordable for this long. */
export const REACH_FUND_SECONDS = 60;

export interface BudgetMemory<M> {
  inner: M;
  account: IdleAccount;
  /** The fixed delays simulated on the same demand, and the one followed (shadows.ts). */
  shadows: Shadows;
  /** Set when the account resumed from the node store: the save and how many restarts. */
  resumed?: { from: number; times: number };
  /** Demand's recent lows: how fast it rises (burst-reach.ts); not carried over a restart. */
  lows: DemandLows;
}

export interface BudgetOptions {
  /** The account as saved before a restart (the node store). */
  carried?: CarriedAccount;
  /** The fixed delays simulated (seconds); CANDIDATE_DELAYS_SECONDS by default. */
  delaysSeconds?: readonly number[];
  /** Follow the best fitting fixed delay (default true); false: the inner policy alone (0023). */
  followDelays?: boolean;
}

export type { IdleAccountView };

/** The ratios a followed delay may run at, from what the pool has held (shadows.ts `allowance`). */
export function allowanceOf(a: IdleAccount, budget: number): Allowance & { pace: Pace } {
  const w = windowTotals(a);
  return {
    total: allowance(budget, a.total.held, a.total.cns),
    window: allowance(budget, w.held, w.cns),
    cns: { total: a.total.cns, window: w.cns },
    pace: paceOf(a, budget),
  };
}

/** The budget left, and CNS v2's idle over the buckets a candidate's pace is taken on (shadows.ts `Pace`). */
export function paceOf(a: IdleAccount, budget: number): Pace {
  const since = nextBucketAt(a.at ?? 0) - PACE_BUCKETS * BUCKET_MS;
  const cnsIdle = a.buckets.reduce((sum, b) => (b.start >= since ? sum + b.cns : sum), 0);
  return { since, cnsIdle, budget, budgetLeft: Math.max(0, budgetLeft(a, budget)) };
}

function ratioOf(a: number, b: number): number {
  if (b <= 0) return a <= 0 ? 1 : Number.POSITIVE_INFINITY;
  return a / b;
}

function delayFigures(s: Shadows, budget: number, pace: Pace): DelayFigures[] {
  const base = s.delays.find((d) => d.seconds === 0);
  const now = s.at ?? 0;
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  return s.delays.map((d) => ({
    seconds: d.seconds,
    idleRatio: r3(ratioOf(d.idle, base?.idle ?? 0)),
    windowIdleRatio: r3(
      ratioOf(windowIdle(d, now), base === undefined ? 0 : windowIdle(base, now)),
    ),
    writes: d.writes,
    churn: d.churn,
    fits: fits(s, d, budget),
    paceBeyondBudgetIpSeconds: Math.round(beyondBudget(d, pace)),
  }));
}

export function accountView(
  a: IdleAccount,
  budget: number,
  shadows?: Shadows,
  resumed?: { from: number; times: number },
): IdleAccountView {
  const w = windowTotals(a);
  const r = (x: number): number => Math.round(x);
  return {
    budget,
    ...(a.since !== undefined ? { since: a.since } : {}),
    heldIdleIpSeconds: r(a.total.held),
    cnsV2IdleIpSeconds: r(a.total.cns),
    idleRatio: Math.round(ratioOf(a.total.held, a.total.cns) * 1000) / 1000,
    window: {
      seconds: WINDOW_MS / 1000,
      heldIdleIpSeconds: r(w.held),
      cnsV2IdleIpSeconds: r(w.cns),
      idleRatio: Math.round(ratioOf(w.held, w.cns) * 1000) / 1000,
    },
    budgetLeftIpSeconds: r(budgetLeft(a, budget)),
    cnsV2Writes: a.cnsWrites,
    cnsV2Churn: a.cnsChurn,
    churn: a.heldChurn,
    ...(shadows !== undefined ? shadowsView(a, budget, shadows, resumed) : {}),
    ...(resumed !== undefined ? { resumed } : {}),
  };
}

/** The delay followed, each delay's figures, and the account as the node store keeps it. */
function shadowsView(
  a: IdleAccount,
  budget: number,
  shadows: Shadows,
  resumed?: { from: number; times: number },
): Pick<IdleAccountView, 'following' | 'delays' | 'carry'> {
  const allowed = allowanceOf(a, budget);
  return {
    following: chooseDelay(shadows, budget, shadows.following, allowed),
    delays: delayFigures(shadows, budget, allowed.pace),
    carry: carryAccount(a, shadows, a.at ?? 0, resumed?.times ?? 0),
  };
}

/** The memory a policy starts from: fresh, or resumed from a carried account. */
function startingMemory<M>(inner: PoolPolicy<M>, o: BudgetOptions): BudgetMemory<M> {
  const seconds = o.delaysSeconds ?? CANDIDATE_DELAYS_SECONDS;
  if (o.carried === undefined) {
    return {
      inner: inner.initial(),
      account: emptyAccount(),
      shadows: emptyShadows(seconds),
      lows: [],
    };
  }
  const { account, shadows } = resumeAccount(o.carried, seconds);
  return {
    inner: inner.initial(),
    account,
    shadows,
    lows: [],
    resumed: { from: o.carried.savedAt, times: o.carried.resumes + 1 },
  };
}

export function withIdleBudget<M>(
  inner: PoolPolicy<M>,
  budget: number,
  options: BudgetOptions = {},
): PoolPolicy<BudgetMemory<M>> & { account(m: BudgetMemory<M>, now: number): IdleAccountView } {
  const follow = options.followDelays !== false;
  return {
    name: inner.name,
    // At budget 1 the pool is CNS v2 (decide), its clearing writes too.
    ...(inner.staleClearMs !== undefined && budget > 1 ? { staleClearMs: inner.staleClearMs } : {}),
    initial: () => startingMemory(inner, options),
    observe: (m, o) => {
      const account = observeAccount(m.account, o);
      return {
        ...m,
        inner: inner.observe(m.inner, o),
        account,
        lows: observeLows(m.lows, o.at, o.demand),
        shadows: observeShadows(m.shadows, o, follow ? budget : 0, allowanceOf(account, budget)),
      };
    },
    decide: (m, view) => {
      // Budget 1 leaves nothing to spend: any IP held above the target, and
      // any write CNS v2 would not make, can only cost idle or wait against
      // it on a control plane whose rounds take their time. So the pool is
      // CNS v2 (docs/decisions/0034).
      if (budget <= 1) return cnsV2Decision(view);
      const account = advanceAccount(m.account, view.now);
      // Rounds too short to hold a rise back by what the wait promise
      // allows are not worth planning for (the CIDR backend's).
      const v = account.lagMs > ROUND_MATTERS_MS ? { ...view, roundMs: account.lagMs } : view;
      const d = inner.decide(m.inner, v);
      const followed = follow
        ? followDelay(d, v, advanceShadows(m.shadows, v.now), budget, allowanceOf(account, budget))
        : d;
      return unreadRiseGivenUp(
        budgeted(
          burstReach(
            deliveredRiseKept(waitGuarded(followed, v, account, budget), v, account),
            v,
            account,
            m.lows,
          ),
          v,
          account,
          budget,
        ),
        v,
        account,
      );
    },
    account: (m, now) =>
      accountView(
        advanceAccount(m.account, now),
        budget,
        advanceShadows(m.shadows, now),
        m.resumed,
      ),
  };
}

/** CNS v2's own decision: the target, written as it changes. */
export function cnsV2Decision(v: PolicyView): PolicyDecision {
  return {
    applied: v.target,
    deferred: false,
    why: {
      policy: 'auto',
      summary:
        `following the target ${v.target} as CNS v2 does: an idle budget of 1 leaves nothing ` +
        'to hold IPs with',
    },
  };
}

/**
 * The inner decision, holding at least what the followed fixed delay would
 * hold now (its highest target of the last `delay` seconds, never above the
 * request): on the demand seen so far that delay's idle fits the allowance
 * (the budget, more while the pool has held less; shadows.ts), and it is the
 * longest that does, so the budget buys its holds.
 */
export function followDelay(
  d: PolicyDecision,
  v: PolicyView,
  shadows: Shadows,
  budget: number,
  allowed?: Allowance,
): PolicyDecision {
  const { target, request, now } = v;
  if (target >= request) return d;
  const seconds = chooseDelay(shadows, budget, shadows.following, allowed);
  if (seconds <= 0) return d;
  const held = Math.min(request, shadowRequest(shadows.runs, now, seconds * 1000) ?? target);
  if (held <= Math.max(target, d.applied)) return d;
  const falls = nextFall(shadows.runs, now, seconds * 1000);
  const recheckAt = Math.min(d.recheckAt ?? Number.POSITIVE_INFINITY, falls);
  return {
    applied: held,
    deferred: true,
    ...(Number.isFinite(recheckAt) ? { recheckAt } : {}),
    ...(d.riseLikely !== undefined ? { riseLikely: d.riseLikely } : {}),
    why: {
      policy: d.why?.policy ?? 'auto',
      summary:
        `holding ${held} for the target ${target} as a fixed ${seconds} s delay would: of the delays ` +
        `simulated on this node's demand it is the longest whose idle IPs fit within ${budget} x CNS v2's, ` +
        'or above it while this pool has held less (the allowance), and what is left of the budget ' +
        `would last another ${PACE_BUCKETS} hours at its recent pace`,
      following: seconds,
      ...(d.why !== undefined ? { inner: d.why.summary } : {}),
    },
  };
}

/**
 * IPs of churn the pool has saved against CNS v2, counting CNS v2's churn
 * short by CHURN_MODEL_MARGIN: the counterfactual's lag is measured on the
 * pool's own scale-ups and its write window assumed, so its churn is an
 * estimate.
 */
export function churnSaved(a: IdleAccount): number {
  return a.cnsChurn * (1 - CHURN_MODEL_MARGIN) - a.heldChurn;
}

/**
 * On a control plane that works a node one round at a time (v.roundMs set)
 * a hold's release, begun later than CNS v2's (when the target fell), holds
 * back a rise that comes during its round. So:
 * - a hold begins (the target just fell, or a round just landed above it,
 *   or CNS v2's model begins a release round: a hold is kept while its
 *   round begun before runs) on a record of when demand comes
 *   back (riseLikely) that the budget can carry it past by
 *   CARRY_MARGIN_ROUNDS rounds: it then ends with the rise (the budget's
 *   guard otherwise lets it go a round ahead, auto's release waits a round
 *   after the record runs out); or while the wait promise's own allowance
 *   (waitAllowance) covers the pods its release could hold back; else the
 *   pool follows the target as CNS v2 does;
 * - a hold under way is let go (a late release) only while the allowance
 *   covers what that release could hold back; else it is kept, and the
 *   budget's guard (budgeted) has the last word.
 */
export function waitGuarded(
  d: PolicyDecision,
  v: PolicyView,
  account: IdleAccount,
  budget = Number.POSITIVE_INFINITY,
): PolicyDecision {
  const { target, request, roundMs, now } = v;
  if (!(roundMs !== undefined && roundMs > 0) || !(target < request)) return d;
  const allowance = waitAllowance(account);
  // A hold begins when the target falls, and when a round lands with the
  // status above the target (a rise read before the fall): CNS v2 releases
  // at both moments, so a release then is as early as its own.
  const fell =
    now <= (account.fellAt ?? Number.NEGATIVE_INFINITY) + CNS_WRITE_WINDOW_MS ||
    now <= (account.statusAt ?? Number.NEGATIVE_INFINITY) + CNS_WRITE_WINDOW_MS;
  // Unless CNS v2's control plane is busy with a round begun before: its
  // release then begins when that round ends, on the request of then. A
  // hold kept that long is no later than CNS v2's release, and demand back
  // by then saves the release and the rise after it. (Not a hold the
  // pool's own round under way takes away: keeping it is a rise.)
  const cns = account.cnsRound;
  const own = account.round;
  if (
    fell &&
    d.applied > target &&
    cns !== undefined &&
    cns.began < now - CNS_WRITE_WINDOW_MS &&
    (own === undefined || own.reads >= d.applied)
  ) {
    return { ...d, ...recheckBy(d, cns.end + 1, now) };
  }
  const cnsReleases =
    cns !== undefined && cns.releases > 0 && now <= cns.began + CNS_WRITE_WINDOW_MS;
  if (fell || cnsReleases) {
    if (!(d.applied > target)) return d;
    // The budget must carry the hold past the likely rise by a margin: a guard
    // that runs out of it later lets the hold go into whatever comes then.
    const margin = CARRY_MARGIN_ROUNDS * roundMs;
    if (d.riseLikely !== undefined && carries(d, v, account, budget, d.riseLikely.until + margin)) {
      return d;
    }
    const risked = heldBackAtMost(account, d.applied - target, roundMs, target - v.demand);
    if (allowance >= risked) return d;
    return {
      applied: target,
      deferred: false,
      why: {
        policy: d.why?.policy ?? 'auto',
        summary:
          `following the target ${target}: with no record of when demand comes back that the ` +
          `budget can carry it to, holding ` +
          `${d.applied} would end in a release begun later than CNS v2's, which could hold back ` +
          `${risked} pods' IPs by a round of the control plane, more than the pod wait promise ` +
          `leaves (${Math.max(0, Math.floor(allowance))} pods)`,
        waitAllowancePods: Math.floor(allowance),
        heldBackAtMost: risked,
      },
    };
  }
  if (!(d.applied < request)) return d;
  const risked = heldBackAtMost(account, request - d.applied, roundMs, d.applied - v.demand);
  if (allowance >= risked) return d;
  return {
    applied: request,
    deferred: true,
    recheckAt: Math.min(d.recheckAt ?? Number.POSITIVE_INFINITY, now + roundMs),
    ...(d.riseLikely !== undefined ? { riseLikely: d.riseLikely } : {}),
    why: {
      policy: d.why?.policy ?? 'auto',
      summary:
        `keeping ${request} for the target ${target}: a release begun now, later than CNS v2's, ` +
        `could hold back ${risked} pods' IPs by a round of the control plane, more than the pod ` +
        `wait promise leaves (${Math.max(0, Math.floor(allowance))} pods)`,
      waitAllowancePods: Math.floor(allowance),
      heldBackAtMost: risked,
    },
  };
}

/** Whether the budget can carry `d`'s hold, and a release after it, until `until` (ms). */
function carries(
  d: PolicyDecision,
  v: PolicyView,
  account: IdleAccount,
  budget: number,
  until: number,
): boolean {
  const spend = Math.max(0, d.applied - v.demand) - budget * Math.max(0, v.target - v.demand);
  if (spend <= 0) return true;
  const usable = budgetLeft(account, budget) - spend * releaseLagSeconds(account, v.now);
  return usable >= (spend * Math.max(0, until - v.now)) / 1000;
}

/**
 * Pods a release the record cannot time may still hold back: WAIT_RISK_SHARE
 * of the pods started so far, less those the pool's own releases held back.
 */
export function waitAllowance(account: IdleAccount): number {
  return WAIT_RISK_SHARE * (account.podsStarted ?? 0) - (account.heldBack ?? 0);
}

/**
 * Pods one release of `released` IPs could hold back: those arriving during
 * its round beyond the target's room above demand (`room`), at least one
 * and at most the IPs it releases. Arrivals are taken as the larger of the largest rise of demand
 * seen at once and twice what arrives in a round at the rate seen.
 */
export function heldBackAtMost(
  account: IdleAccount,
  released: number,
  roundMs: number,
  room = 0,
): number {
  const pods = account.podsStarted ?? 0;
  const since = account.since;
  const seconds = since === undefined || account.at === undefined ? 0 : (account.at - since) / 1000;
  if (!(pods > 0 && seconds > 0)) return released;
  const perRound = Math.ceil(2 * (pods / seconds) * (roundMs / 1000));
  const arrivals = Math.max(largestStep(account), perRound);
  // At least one pod: a release begun late is never taken to risk nothing.
  return Math.min(released, Math.max(1, arrivals - Math.max(0, room)));
}

/**
 * A rise the control plane has not begun on (a round under way read less:
 * it waits for the next round) is given up when the target falls, as CNS
 * v2's lower request gives it up: holding it would have the next round
 * acquire IPs no longer needed, then a release. A rise a round has read is
 * delivered anyway, and is held as any other IPs (budgeted).
 */
export function unreadRiseGivenUp(
  d: PolicyDecision,
  v: PolicyView,
  account: IdleAccount,
): PolicyDecision {
  const round = account.round;
  if (round === undefined || !(v.target < v.request)) return d;
  const delivering = Math.max(round.reads, v.allocated ?? 0, v.target);
  if (!(d.applied > delivering)) return d;
  return {
    ...d,
    applied: delivering,
    deferred: delivering > v.target,
    why: whyWith(
      d,
      `not above ${delivering}: the rise to ${v.request} waits for the round under way, ` +
        'and is given up as CNS v2 gives it up',
    ),
  };
}

/**
 * A rise a round under way has read comes whatever is written now: a lower
 * request would only have it released by another round once it lands (two
 * writes more and its churn). So the decision does not go below it, while
 * the budget's guard, which judges it next (budgeted), can pay for holding
 * it; else the lower request is written, as CNS v2 writes it.
 */
export function deliveredRiseKept(
  d: PolicyDecision,
  v: PolicyView,
  account: IdleAccount,
): PolicyDecision {
  const round = account.round;
  if (round === undefined || !(v.target < v.request)) return d;
  const delivering = Math.min(v.request, round.reads);
  if (!(delivering > (v.allocated ?? 0)) || !(d.applied < delivering)) return d;
  return {
    ...d,
    applied: delivering,
    deferred: delivering > v.target,
    ...recheckBy(d, ownRoundEnd(account), v.now),
    why: whyWith(
      d,
      `not below ${delivering}: the round under way delivers it whatever is written now`,
    ),
  };
}

/** `d`'s recheck, or `at` when that is earlier and still to come. */
function recheckBy(d: PolicyDecision, at: number | undefined, now: number): { recheckAt?: number } {
  const soonest = Math.min(
    d.recheckAt ?? Number.POSITIVE_INFINITY,
    at !== undefined && at > now ? at : Number.POSITIVE_INFINITY,
  );
  return Number.isFinite(soonest) ? { recheckAt: soonest } : {};
}

/**
 * Seconds a release decided now takes to show in the status: the write
 * window, the rest of the pool's round under way, and a round of its own;
 * at least RELEASE_LAG_SECONDS.
 */
export function releaseLagSeconds(account: IdleAccount, now: number): number {
  const lag = account.lagMs;
  if (!(lag > 0)) return RELEASE_LAG_SECONDS;
  const end = ownRoundEnd(account);
  const rest = end === undefined ? 0 : Math.max(0, end - now);
  return Math.max(RELEASE_LAG_SECONDS, (CNS_WRITE_WINDOW_MS + rest + lag) / 1000);
}

/** The inner decision, held to the budget. */
export function budgeted(
  d: PolicyDecision,
  v: PolicyView,
  account: IdleAccount,
  budget: number,
): PolicyDecision {
  const { target, demand, now } = v;
  const reaching = target > v.request;
  // A rise the status has not delivered yet when the target falls is held
  // as any other IPs are: the control plane read it when it started on it
  // and delivers it anyway, so giving it up would only add a write and a
  // release (docs/decisions/0034).
  const applied = Math.round(d.applied);
  if (!(applied > target)) return d;
  // Reaching above a rising target acquires IPs CNS v2 would not: only when
  // the churn saved so far would pay for releasing them unused, and (below)
  // when the budget can hold them until demand grows into them.
  if (reaching && churnSaved(account) < 2 * (applied - target)) {
    return { applied: target, deferred: false };
  }
  // Idle IP-s per second spent beyond the budget's share of CNS v2's while holding `applied`.
  const spend = Math.max(0, applied - demand) - budget * Math.max(0, target - demand);
  if (spend <= 0) return d;
  const left = budgetLeft(account, budget);
  const usable =
    left - spend * (releaseLagSeconds(account, now) + (reaching ? REACH_FUND_SECONDS : 0));
  const figures = { budget, budgetLeftIpSeconds: Math.round(left), spendPerSecond: spend };
  // The pool behaves as CNS v2 now: `why` says what the budget left cannot do.
  const letGo = (why: string, extra: Partial<PolicyExplanation> = {}): PolicyDecision => ({
    applied: target,
    deferred: false,
    why: {
      policy: d.why?.policy ?? 'auto',
      summary:
        `following the target ${target}: what is left of the idle budget (${budget} x CNS v2; ` +
        `${Math.round(left)} IP-s) ${why}`,
      ...figures,
      ...extra,
    },
  });
  // A hold the budget cannot carry to the inner policy's next look (when its
  // evidence says the IPs are likely needed again) is let go now rather than
  // half-way: the same write, less of the budget spent on it.
  // A followed delay's hold (followDelay) is not planned to its end: most of
  // them end early, when demand comes back, and the delay fits the budget.
  const followed = d.why?.following !== undefined;
  const plannedMs = d.recheckAt === undefined || followed ? 0 : Math.max(0, d.recheckAt - now);
  // A write made while the pool's own round is under way waits for it: a
  // release decided now begins when the round ends, no sooner than one
  // decided then. So while the budget carries the hold to that end, the
  // guard looks again then, on what demand did meanwhile (a burst back by
  // then needs no release, and no round of its own ahead of its rise).
  const roundEnd = ownRoundEnd(account);
  if (roundEnd !== undefined && roundEnd > now && usable >= (spend * (roundEnd - now)) / 1000) {
    return {
      ...d,
      ...recheckBy(d, roundEnd + 1, now),
      why: { ...whyWith(d, 'looked at again when the round under way ends'), ...figures },
    };
  }
  if (usable <= (spend * plannedMs) / 1000) {
    return letGo(
      `cannot pay for holding ${applied}, so the pool behaves as CNS v2 until it is earned back`,
    );
  }
  const until = now + (usable / spend) * 1000;
  // The budget would run out inside the next span where demand is likely
  // back (or a release round before it): a release then would hold that
  // rise back. While that span is still a round or more away, let go now;
  // once inside it, hold on as long as the budget lasts (the rise may come
  // first), and look again at its start.
  const rise = d.riseLikely;
  const zone = rise === undefined ? undefined : rise.from - releaseLagSeconds(account, now) * 1000;
  if (
    rise !== undefined &&
    zone !== undefined &&
    now < zone &&
    until >= zone &&
    until < rise.until
  ) {
    return letGo(
      'would run out just before demand is likely back above it, where a release would hold ' +
        'that rise back; it goes now, a round or more ahead',
      { riseLikely: rise },
    );
  }
  const recheckAt = Math.min(
    d.recheckAt ?? Number.POSITIVE_INFINITY,
    until,
    nextBucketAt(now),
    zone !== undefined && zone > now ? zone : Number.POSITIVE_INFINITY,
  );
  return {
    ...d,
    recheckAt,
    why: {
      ...(d.why ?? { policy: 'auto', summary: `holding ${applied} for the target ${target}` }),
      ...figures,
      budgetLastsUntil: Math.round(until),
    },
  };
}
