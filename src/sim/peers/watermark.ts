// MODELS of watermark pool policies, for `simulate --compare`; not their code.
// Both keep a number of free IPs above the pods (a watermark), allocate at
// once and release the excess only after a delay:
//
// - Cilium (ENI/Azure IPAM, operator side), https://docs.cilium.io/en/stable/network/concepts/ipam/eni/:
//   pre-allocate 8 free IPs (its default), max-above-watermark 0, and excess
//   IPs released once marked for release-delay 180 s (operator flag
//   --excess-ip-release-delay, default 180).
// - AWS VPC CNI ipamd, https://github.com/aws/amazon-vpc-cni-k8s#warm_ip_target:
//   WARM_IP_TARGET free IPs, never fewer than MINIMUM_IP_TARGET in all, and a
//   released IP cools down 30 s (its IP cooldown period) - modelled as the
//   excess released once it has held 30 s. Values here: WARM_IP_TARGET 8,
//   MINIMUM_IP_TARGET 16 (a batch), so its floor matches CNS's buffer.
//
// One IP at a time (no batch): the request is the watermark, damped by the
// fixed-delay rule the product uses for --release-delay N.
import { dampedTarget, recordTarget, type TargetSample } from '../../scaling/damping.ts';
import { DEFAULT_MAX_IPS } from '../../scaling/scaler.ts';
import type { PoolPolicy } from '../../scaling/policies/policy.ts';

export interface WatermarkOptions {
  name: string;
  /** Free IPs to keep above the pods. */
  warm: number;
  /** Never fewer IPs in all. */
  minimum: number;
  /** Excess released once it has held this long (ms). */
  releaseDelayMs: number;
}

export function watermarkModel(o: WatermarkOptions): PoolPolicy<TargetSample[]> {
  const want = (demand: number, max: number): number =>
    Math.min(max, Math.max(o.minimum, demand + o.warm));
  return {
    name: o.name,
    peerModel: true,
    initial: () => [],
    observe: (h, obs) =>
      recordTarget(h, obs.at, want(obs.demand, DEFAULT_MAX_IPS), o.releaseDelayMs),
    decide: (h, v) => {
      const d = dampedTarget(h, v.now, v.request, o.releaseDelayMs);
      const applied = Math.min(v.scaler.max, d.target);
      return {
        applied,
        deferred: d.deferred,
        ...(d.recheckAt !== undefined ? { recheckAt: d.recheckAt } : {}),
      };
    },
  };
}

export const ciliumModel = (): PoolPolicy<TargetSample[]> =>
  watermarkModel({ name: 'cilium-like', warm: 8, minimum: 0, releaseDelayMs: 180_000 });

export const awsModel = (): PoolPolicy<TargetSample[]> =>
  watermarkModel({ name: 'aws-like', warm: 8, minimum: 16, releaseDelayMs: 30_000 });
