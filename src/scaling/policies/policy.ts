// A pool policy: what request to apply, given the target the CNS v2 formula
// computes, the request written, and what the policy has observed so far.
// The monitor records every observation (demand and target over time) into
// the policy's memory through the pure `observe`, and asks `decide` at every
// reconcile; both are pure, so a policy is a deterministic function of its
// observed history and the time. `--release-delay 0`, `N` and `auto` are the
// product's policies; `simulate --compare` plugs in models of the peers'.
import type { Scaler } from '../scaler.ts';
import type { IdleAccountView } from './budget/idle-account-view.ts';

/** One observation: demand and the target it gives, from `at` on (ms). */
export interface Observation {
  at: number;
  demand: number;
  target: number;
  /**
   * IPs the NNC status holds then (the monitor's live observations carry it;
   * history replayed from the node store does not).
   */
  allocated?: number;
  /**
   * What the NNC's spec asks of the control plane then (live observations):
   * its requestedIPCount, and how many of the status's IPs its ipsNotInUse
   * marks for release. With `allocated` they say whether the control plane
   * has work to do (docs/decisions/0034: the account follows its rounds).
   */
  requested?: number;
  releasing?: number;
}

/** What a decision sees. */
export interface PolicyView {
  now: number;
  demand: number;
  /** The CNS v2 target for the demand (exhaustion override applied). */
  target: number;
  /** The requestedIPCount last written. */
  request: number;
  /** The effective scaler (exhaustion override applied). */
  scaler: Scaler;
  exhausted: boolean;
  /** IPs the NNC status holds (the control plane may lag the request). */
  allocated?: number;
  /**
   * How long a round of the control plane takes (ms), as measured on the
   * pool's own rounds (the idle account's; absent or 0: not known). A
   * release under way holds back a rise written after it by the rest of
   * its round (the fulfiller works a node one round at a time).
   */
  roundMs?: number;
}

export interface PolicyDecision {
  /** The request to apply now. */
  applied: number;
  /** True when a lower target is being held back. */
  deferred: boolean;
  /** When the decision may change without any new input. */
  recheckAt?: number;
  /**
   * While IPs are held above the target: when demand is next likely to come
   * back above the target (ms, from the policy's record), so that a release
   * that must come (the idle budget's) is started a round before it, not
   * inside it (docs/decisions/0034).
   */
  riseLikely?: RiseLikely;
  /** Why, in a few fields a person can read (logs, /debug/pool). */
  why?: PolicyExplanation;
}

/** The next span of time in which a rise above the target is likely: from, until (ms). */
export interface RiseLikely {
  from: number;
  until: number;
}

export interface PolicyExplanation {
  policy: string;
  /** One sentence. */
  summary: string;
  [key: string]: unknown;
}

export interface PoolPolicy<M = unknown> {
  /** As it appears in logs, tables and reports: `cns-v2`, `delay-60s`, `auto`, ... */
  readonly name: string;
  initial(): M;
  /** The memory after one more observation; never grows without bound. */
  observe(memory: M, observation: Observation): M;
  decide(memory: M, view: PolicyView): PolicyDecision;
  /**
   * How long a write whose only purpose is to drop stale ids from
   * `spec.ipsNotInUse` may wait to ride along with the next write (ms);
   * 0 or absent: it goes out at once (CNS parity).
   */
  readonly staleClearMs?: number;
  /**
   * A model of another product's policy (simulate --compare): not held to
   * this product's rules (guardDecision), since the point is to see its own.
   */
  readonly peerModel?: boolean;
  /**
   * The policy's account of its idle IPs against CNS v2 at `now` (policies
   * with an idle budget): for /debug/pool, /metrics and simulate --compare.
   */
  account?(memory: M, now: number): IdleAccountView;
}

/** `d`'s explanation with `clause` added to its summary (or as it, when it had none). */
export function whyWith(d: PolicyDecision, clause: string): PolicyExplanation {
  return {
    ...(d.why ?? { policy: 'auto', summary: '' }),
    summary: d.why ? `${d.why.summary}; ${clause}` : clause,
  };
}

/** Any policy, whatever its memory. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyPolicy = PoolPolicy<any>;

/**
 * The rules every product policy obeys whatever it computes: never below the
 * CNS v2 target (so never below demand plus the buffer), a higher target at
 * once, nothing above max, and no growth unless the target asks for it
 * (then possibly beyond it, to what the policy expects to need).
 */
export function guardDecision(d: PolicyDecision, view: PolicyView): PolicyDecision {
  const { target, request } = view;
  const max = Math.max(target, view.scaler.max);
  const proposed = Number.isFinite(d.applied) ? Math.round(d.applied) : target;
  let applied = Math.min(Math.max(proposed, target), max);
  if (target <= request) applied = Math.min(applied, request);
  // A recheck is always in the future, in whole ms: a policy can never make the monitor spin.
  const { recheckAt: asked, ...rest } = d;
  const recheckAt =
    asked === undefined || !Number.isFinite(asked)
      ? undefined
      : Math.max(Math.ceil(asked), Math.floor(view.now) + 1);
  return {
    ...rest,
    applied,
    deferred: applied > target && target < request,
    ...(recheckAt !== undefined ? { recheckAt } : {}),
  };
}

/** Wraps a policy so that every decision passes through guardDecision (peer models excepted). */
export function guarded<M>(policy: PoolPolicy<M>): PoolPolicy<M> {
  if (policy.peerModel === true) return policy;
  return {
    name: policy.name,
    initial: () => policy.initial(),
    observe: (m, o) => policy.observe(m, o),
    decide: (m, v) => guardDecision(policy.decide(m, v), v),
    ...(policy.staleClearMs !== undefined ? { staleClearMs: policy.staleClearMs } : {}),
    ...(policy.account ? { account: policy.account.bind(policy) } : {}),
  };
}
