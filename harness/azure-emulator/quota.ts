// ARM's request budget per subscription and identity, as the emulator keeps
// it: reads and writes in two token buckets (reads: 250, refilled 25 a
// second; writes: 200, refilled 10 a second). Every answer says what is
// left (x-ms-ratelimit-remaining-subscription-reads / -writes); a request
// that finds its bucket empty gets 429 with Retry-After. Pure apart from
// the injected clock.
//
// Compute also limits each VM (PerVmQuota): a scale-set VM's updates in a
// bucket of 12 refilled 4 a minute (Azure docs, "Troubleshooting throttling
// errors in Azure" for Compute: the PutVM policies over 3 and 30 minutes;
// cloud-provider-azure's vmss cache exists because of them), each answer
// saying what is left in `x-ms-ratelimit-remaining-resource`
// (`Microsoft.Compute/PutVMScaleSetVM3Min;N`), an empty bucket a 429 with
// Retry-After.

export interface BucketSpec {
  size: number;
  perSecond: number;
}

export interface QuotaSpec {
  reads: BucketSpec;
  writes: BucketSpec;
}

export const ARM_QUOTA: QuotaSpec = {
  reads: { size: 250, perSecond: 25 },
  writes: { size: 200, perSecond: 10 },
};

class Bucket {
  private readonly spec: BucketSpec;
  private tokens: number;
  private at: number;
  constructor(spec: BucketSpec, now: number) {
    this.spec = spec;
    this.tokens = spec.size;
    this.at = now;
  }

  /** Takes one token: the tokens left, or the seconds to wait when none. */
  take(now: number): { left: number } | { retryAfter: number } {
    this.tokens = Math.min(
      this.spec.size,
      this.tokens + ((now - this.at) / 1000) * this.spec.perSecond,
    );
    this.at = now;
    if (this.tokens < 1) {
      return { retryAfter: Math.max(1, Math.ceil((1 - this.tokens) / this.spec.perSecond)) };
    }
    this.tokens -= 1;
    return { left: Math.floor(this.tokens) };
  }
}

export class ArmQuota {
  private readonly reads: Bucket;
  private readonly writes: Bucket;
  /** 429s answered, for tests and reports. */
  throttled = 0;

  constructor(spec: QuotaSpec, now: number) {
    this.reads = new Bucket(spec.reads, now);
    this.writes = new Bucket(spec.writes, now);
  }

  /** Charges one request: its header, or the 429's Retry-After (s). */
  charge(
    method: string,
    now: number,
  ): { header: Record<string, string> } | { retryAfter: number; header: Record<string, string> } {
    const read = method.toUpperCase() === 'GET';
    const name = read
      ? 'x-ms-ratelimit-remaining-subscription-reads'
      : 'x-ms-ratelimit-remaining-subscription-writes';
    const r = (read ? this.reads : this.writes).take(now);
    if ('retryAfter' in r) {
      this.throttled++;
      return { retryAfter: r.retryAfter, header: { [name]: '0' } };
    }
    return { header: { [name]: String(r.left) } };
  }
}

/** Compute's per-VM update budget: 12, refilled 4 a minute. */
export const COMPUTE_PER_VM: BucketSpec = { size: 12, perSecond: 4 / 60 };
export const REMAINING_RESOURCE_HEADER = 'x-ms-ratelimit-remaining-resource';
const PER_VM_POLICY = 'Microsoft.Compute/PutVMScaleSetVM3Min';

export class PerVmQuota {
  private readonly spec: BucketSpec;
  private readonly buckets = new Map<string, Bucket>();
  /** 429s answered, for tests and reports. */
  throttled = 0;

  constructor(spec: BucketSpec = COMPUTE_PER_VM) {
    this.spec = spec;
  }

  /** Charges one update of the VM `vm` (its id). */
  charge(
    vm: string,
    now: number,
  ):
    | { header: Record<string, string> }
    | { retryAfter: number; header: Record<string, string>; policy: string; allowed: number } {
    const k = vm.toLowerCase();
    let bucket = this.buckets.get(k);
    if (!bucket) this.buckets.set(k, (bucket = new Bucket(this.spec, now)));
    const r = bucket.take(now);
    if ('retryAfter' in r) {
      this.throttled++;
      return {
        retryAfter: r.retryAfter,
        header: { [REMAINING_RESOURCE_HEADER]: `${PER_VM_POLICY};0` },
        policy: PER_VM_POLICY.split('/')[1]!,
        allowed: this.spec.size,
      };
    }
    return { header: { [REMAINING_RESOURCE_HEADER]: `${PER_VM_POLICY};${r.left}` } };
  }
}
