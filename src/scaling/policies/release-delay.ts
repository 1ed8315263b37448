// The policy a `--release-delay` value stands for; `auto` keeps within the
// idle budget (`--idle-budget`, idle IP-seconds as a multiple of CNS v2's).
import type { ReleaseDelay } from '../release-delay-value.ts';
import { autoPolicy } from './auto/auto.ts';
import type { CarriedAccount } from './budget/carried.ts';
import { DEFAULT_IDLE_BUDGET, withIdleBudget } from './budget/idle-budget.ts';
import { fixedDelayPolicy } from './fixed-delay.ts';
import type { AnyPolicy } from './policy.ts';

/** `carried`: auto's idle account as saved before a restart (the node store). */
export function releasePolicy(
  delay: ReleaseDelay,
  idleBudget = DEFAULT_IDLE_BUDGET,
  carried?: CarriedAccount,
): AnyPolicy {
  return delay.kind === 'auto'
    ? withIdleBudget(autoPolicy(), idleBudget, carried !== undefined ? { carried } : {})
    : fixedDelayPolicy(delay.seconds * 1000);
}
