// ARM's budget as ARM counts it: reads and writes apart (ARM keeps one
// bucket of each per subscription and identity: reads 250 refilled 25 a
// second, writes 200 refilled 10 a second), so polls and re-reads never
// spend the writes. One ArmBudget per service (Microsoft.Network,
// Microsoft.Compute: each resource provider throttles on its own too).
//
// What ARM says is left (x-ms-ratelimit-remaining-subscription-reads /
// -writes) is shared with every other client of the subscription: when it
// falls below `lowWater`, calls of that kind pause for as long as ARM takes
// to refill back to it, so this process slows down before ARM answers 429.
import type { BucketClock, BucketConfig } from './token-bucket.ts';
import { realBucketClock, TokenBucket } from './token-bucket.ts';

export type CallKind = 'read' | 'write';

export interface BudgetConfig {
  reads: BucketConfig;
  writes: BucketConfig;
  /** Remaining-quota floor per kind (default reads 25, writes 20: a tenth of ARM's buckets). */
  lowWater?: { reads: number; writes: number };
}

/** ARM's refill rates per second, used to wait for the quota to come back. */
export const ARM_REFILL = { reads: 25, writes: 10 };
export const DEFAULT_LOW_WATER = { reads: 25, writes: 20 };

export const REMAINING_HEADER: Record<CallKind, string> = {
  read: 'x-ms-ratelimit-remaining-subscription-reads',
  write: 'x-ms-ratelimit-remaining-subscription-writes',
};

export const kindOf = (method: string): CallKind =>
  method.toUpperCase() === 'GET' || method.toUpperCase() === 'HEAD' ? 'read' : 'write';

/** How long (ms) to hold calls of a kind when ARM says `remaining` are left. Pure. */
export function lowQuotaPause(kind: CallKind, remaining: number, lowWater: number): number {
  if (!Number.isFinite(remaining) || remaining >= lowWater) return 0;
  const perSecond = kind === 'read' ? ARM_REFILL.reads : ARM_REFILL.writes;
  return Math.ceil(((lowWater - Math.max(0, remaining)) / perSecond) * 1000);
}

export class ArmBudget {
  readonly reads: TokenBucket;
  readonly writes: TokenBucket;
  private readonly lowWater: { reads: number; writes: number };

  constructor(config: BudgetConfig, clock: BucketClock = realBucketClock) {
    this.reads = new TokenBucket(config.reads, clock);
    this.writes = new TokenBucket(config.writes, clock);
    this.lowWater = config.lowWater ?? DEFAULT_LOW_WATER;
  }

  /** One bucket for everything (tests that count every call against one budget). */
  static single(bucket: TokenBucket): ArmBudget {
    const budget = Object.create(ArmBudget.prototype) as ArmBudget;
    Object.assign(budget, { reads: bucket, writes: bucket, lowWater: DEFAULT_LOW_WATER });
    return budget;
  }

  bucket(kind: CallKind): TokenBucket {
    return kind === 'read' ? this.reads : this.writes;
  }

  /** What ARM said is left after a call: pauses that kind when low. Returns the pause (ms). */
  observe(kind: CallKind, header: string | undefined): number {
    if (header === undefined || header.trim() === '') return 0;
    const floor = kind === 'read' ? this.lowWater.reads : this.lowWater.writes;
    const pause = lowQuotaPause(kind, Number(header), floor);
    if (pause > 0) this.bucket(kind).pauseFor(pause);
    return pause;
  }
}
