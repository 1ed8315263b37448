// `--release-delay 0` (exactly CNS v2) and `--release-delay N` (a lower target
// applied only once it has held N seconds: the highest target of the last N
// seconds, damping.ts) as pool policies.
import { dampedTarget, recordTarget, type TargetSample } from '../damping.ts';
import type { AnyPolicy, PoolPolicy } from './policy.ts';

/** CNS v2: the target is the request, at once, both ways. */
export function cnsV2Policy(): PoolPolicy<null> {
  return {
    name: 'cns-v2',
    initial: () => null,
    observe: () => null,
    decide: (_m, v) => ({ applied: v.target, deferred: false }),
  };
}

export function fixedDelayName(delayMs: number): string {
  return `delay-${Math.round(delayMs / 1000)}s`;
}

/** Scale-down damping by a fixed delay; 0 is cnsV2Policy. */
export function fixedDelayPolicy(delayMs: number): AnyPolicy {
  return delayMs > 0 ? delayPolicy(delayMs) : cnsV2Policy();
}

function delayPolicy(delayMs: number): PoolPolicy<TargetSample[]> {
  return {
    name: fixedDelayName(delayMs),
    initial: () => [],
    observe: (history, o) => recordTarget(history, o.at, o.target, delayMs),
    decide: (history, v) => {
      const d = dampedTarget(history, v.now, v.request, delayMs);
      return {
        applied: d.target,
        deferred: d.deferred,
        ...(d.recheckAt !== undefined ? { recheckAt: d.recheckAt } : {}),
        ...(d.deferred
          ? {
              why: {
                policy: fixedDelayName(delayMs),
                summary: `holding ${d.target} until the lower target ${v.target} has held ${delayMs / 1000} s`,
                heldUntil: d.recheckAt,
              },
            }
          : {}),
      };
    },
  };
}
