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
//
// Compute also limits each resource (a VM: 12 updates, refilled 4 a minute)
// and says what is left in x-ms-ratelimit-remaining-resource
// (`Microsoft.Compute/PutVMScaleSetVM3Min;3,Microsoft.Compute/PutVMScaleSetVM30Min;40`):
// when the lowest count falls to `resourceLowWater` (default 1), the next
// write to that resource waits one refill (15 s) per update short of it.
import type { BucketClock, BucketConfig } from './token-bucket.ts';
import { TokenBucket } from './token-bucket.ts';
import { monotonicClock, sleepOrAbort } from '../../clock/clock.ts';

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

export const REMAINING_RESOURCE_HEADER = 'x-ms-ratelimit-remaining-resource';
/** Compute's per-VM refill: 4 updates a minute, one every 15 s. */
export const RESOURCE_REFILL_MS = 15_000;

/** The lowest count of an x-ms-ratelimit-remaining-resource value; undefined when none. Pure. */
export function remainingOfResource(header: string | null | undefined): number | undefined {
  if (!header) return undefined;
  const counts = header
    .split(',')
    .map((p) => Number(p.split(';')[1]))
    .filter((n) => Number.isFinite(n));
  return counts.length ? Math.min(...counts) : undefined;
}

/** The resource a request writes: its URL path without the query, lower case. */
export const resourceOf = (url: string): string =>
  (/^[a-z]+:\/\/[^/]+(\/[^?]*)/i.exec(url)?.[1] ?? url).toLowerCase();

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
  private readonly clock: BucketClock;
  /** Per resource: no write before this time (its own remaining budget ran low). */
  private readonly resourceHeld = new Map<string, number>();

  constructor(config: BudgetConfig, clock: BucketClock = monotonicClock) {
    this.clock = clock;
    this.reads = new TokenBucket(config.reads, clock);
    this.writes = new TokenBucket(config.writes, clock);
    this.lowWater = config.lowWater ?? DEFAULT_LOW_WATER;
  }

  /** One bucket for everything (tests that count every call against one budget). */
  static single(bucket: TokenBucket): ArmBudget {
    const budget = Object.create(ArmBudget.prototype) as ArmBudget;
    Object.assign(budget, {
      reads: bucket,
      writes: bucket,
      lowWater: DEFAULT_LOW_WATER,
      clock: monotonicClock,
      resourceHeld: new Map(),
    });
    return budget;
  }

  bucket(kind: CallKind): TokenBucket {
    return kind === 'read' ? this.reads : this.writes;
  }

  /** The remaining-quota floor of a kind (below it, calls of that kind slow down). */
  floor(kind: CallKind): number {
    return kind === 'read' ? this.lowWater.reads : this.lowWater.writes;
  }

  /** Holds writes to one resource for `ms` (a 429 for that resource alone). */
  holdResource(url: string, ms: number): void {
    const key = resourceOf(url);
    const until = this.clock.now() + ms;
    if ((this.resourceHeld.get(key) ?? -Infinity) >= until) return;
    if (this.resourceHeld.size > 10_000) this.resourceHeld.clear();
    this.resourceHeld.set(key, until);
  }

  /**
   * What Compute said is left for one resource after a write: when low, the
   * next write to it waits a refill per update short. Returns that wait (ms).
   */
  observeResource(url: string, header: string | null | undefined, lowWater = 1): number {
    const left = remainingOfResource(header);
    if (left === undefined || left > lowWater) return 0;
    const wait = (lowWater - left + 1) * RESOURCE_REFILL_MS;
    const key = resourceOf(url);
    if (this.resourceHeld.size > 10_000) this.resourceHeld.clear();
    this.resourceHeld.set(key, this.clock.now() + wait);
    return wait;
  }

  /** Waits until a write to this resource may go (observeResource). Returns the wait (ms). */
  async resourceReady(url: string, signal?: AbortSignal): Promise<number> {
    const key = resourceOf(url);
    const until = this.resourceHeld.get(key);
    if (until === undefined) return 0;
    const wait = until - this.clock.now();
    if (wait <= 0) {
      this.resourceHeld.delete(key);
      return 0;
    }
    await sleepOrAbort(this.clock, wait, signal);
    return wait;
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
