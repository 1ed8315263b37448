// A MODEL of Azure CNS v1's pool scaling, for `simulate --compare`; not its
// code. The rule, from azure-container-networking
// docs/feature/subnet-scarcity/phase-2/2-scalingmath.md and proposal.md
// (https://github.com/Azure/azure-container-networking/tree/master/docs/feature/subnet-scarcity):
// with m = requestThresholdPercent x batch and M = releaseThresholdPercent x
// batch, when free IPs fall below m the request grows by one batch, when they
// exceed M it shrinks by one batch; "reactive and serial": one batch at a
// time, the next step only once the control plane has caught up.
import type { PoolPolicy } from '../../scaling/policies/policy.ts';

export interface CnsV1Options {
  /** releaseThresholdPercent of the scaler (CNS default 150). */
  releaseThresholdPercent: number;
}

export function cnsV1Model(options: CnsV1Options): PoolPolicy<null> {
  return {
    name: 'cns-v1',
    peerModel: true,
    initial: () => null,
    observe: () => null,
    decide: (_m, v) => {
      const { batch, buffer, max } = v.scaler;
      // Serial: while the status has not caught up with the request, wait.
      if (v.allocated !== undefined && v.allocated !== v.request) {
        return { applied: v.request, deferred: false };
      }
      const free = v.request - v.demand;
      const minFree = buffer * batch;
      const maxFree = (options.releaseThresholdPercent / 100) * batch;
      if (free < minFree) return { applied: Math.min(max, v.request + batch), deferred: false };
      if (free > maxFree && v.request - batch >= v.demand) {
        return { applied: v.request - batch, deferred: false };
      }
      return { applied: v.request, deferred: false };
    },
  };
}
