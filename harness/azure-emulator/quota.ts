// ARM's request budget per subscription and identity, as the emulator keeps
// it: reads and writes in two token buckets (reads: 250, refilled 25 a
// second; writes: 200, refilled 10 a second). Every answer says what is
// left (x-ms-ratelimit-remaining-subscription-reads / -writes); a request
// that finds its bucket empty gets 429 with Retry-After. Pure apart from
// the injected clock.

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
