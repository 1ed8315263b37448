// Publishes each subnet's exhaustion as a ClusterSubnetState. Only changes
// are written (plus the first state after start), so an operator's manual
// edit of a CSS status stays until the subnet really changes state; failed
// writes are retried with backoff, one write per subnet at a time. Once
// published exhausted, a subnet stays so for at least `holdMs`.
import { Backoff, retryDelay } from '../kube/backoff.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { SubnetInfo } from './backend.ts';
import { nextExhausted } from './exhaustion.ts';
import type { ExhaustionLevels } from './exhaustion.ts';
import type { ClockTimers } from '../clock/clock.ts';
import type { SubnetStateApi } from './ports.ts';

interface SubnetEntry {
  desired: boolean | undefined;
  published: boolean | undefined;
  /** Clock time of the last successful write. */
  publishedAt: number;
  writing: boolean;
  retryTimer: unknown;
  backoff: Backoff;
}

export interface ExhaustionPublisherOptions {
  api: SubnetStateApi;
  levels: ExhaustionLevels;
  /** Minimum time (ms) an exhausted state stays published before it may recover. */
  holdMs?: number;
  backoff: BackoffOptions;
  clock: ClockTimers;
  logger: Logger;
  random?: () => number;
  /** Told when a subnet's published state flips (for Events); not for a first publication of "not exhausted". */
  onChange?: (subnet: SubnetInfo, exhausted: boolean) => void;
}

export class ExhaustionPublisher {
  private readonly options: ExhaustionPublisherOptions;
  private readonly subnets = new Map<string, SubnetEntry>();
  private readonly latest = new Map<string, SubnetInfo>();
  private stopped = false;
  private inFlight = new Set<Promise<void>>();

  constructor(options: ExhaustionPublisherOptions) {
    this.options = options;
  }

  /** The state last written for a subnet (undefined before the first write). */
  published(name: string): boolean | undefined {
    return this.subnets.get(name)?.published;
  }

  /** The state the subnet should have now. */
  desired(name: string): boolean | undefined {
    return this.subnets.get(name)?.desired;
  }

  /** Feeds the current free counts; writes whatever changed. */
  update(subnets: SubnetInfo[]): void {
    for (const info of subnets) {
      this.latest.set(info.name, info);
      let entry = this.subnets.get(info.name);
      if (!entry) {
        entry = {
          desired: undefined,
          published: undefined,
          publishedAt: 0,
          writing: false,
          retryTimer: undefined,
          backoff: new Backoff(this.options.backoff, this.options.random),
        };
        this.subnets.set(info.name, entry);
      }
      entry.desired = nextExhausted(entry.desired, info.free, this.options.levels);
      this.flush(info.name, entry);
    }
  }

  /** Waits for writes in progress; retries stop. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const e of this.subnets.values()) {
      if (e.retryTimer !== undefined) this.options.clock.clearTimeout(e.retryTimer);
      e.retryTimer = undefined;
    }
    await Promise.allSettled([...this.inFlight]);
  }

  /** Resolves once every subnet's published state equals its desired state or stop. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private flush(name: string, entry: SubnetEntry): void {
    if (this.stopped || entry.writing || entry.retryTimer !== undefined) return;
    const value = entry.desired;
    if (value === undefined || value === entry.published) return;
    const { clock } = this.options;
    const holdLeft = entry.publishedAt + (this.options.holdMs ?? 0) - clock.now();
    if (entry.published === true && !value && holdLeft > 0) {
      // Still within the hold: look again when it ends (the state may have changed).
      entry.retryTimer = clock.setTimeout(() => {
        entry.retryTimer = undefined;
        this.flush(name, entry);
      }, holdLeft);
      return;
    }
    entry.writing = true;
    const log = this.options.logger;
    const armSubnet = this.latest.get(name)?.armSubnet;
    const write = this.options.api
      .publish(name, {
        exhausted: value,
        timestamp: new Date(this.options.clock.now()).toISOString(),
        ...(armSubnet ? { armSubnet } : {}),
      })
      .then(
        () => {
          const before = entry.published;
          entry.published = value;
          entry.publishedAt = this.options.clock.now();
          entry.backoff.reset();
          const info = this.latest.get(name);
          log.info('subnet state published', { subnet: name, exhausted: value, free: info?.free });
          // A flip; the first publication is one only when it says exhausted
          // (no SubnetRecovered at start, before any exhaustion).
          if (before !== value && info && (before !== undefined || value))
            this.options.onChange?.(info, value);
        },
        (err: unknown) => {
          const errInfo = apiErrorInfo(err);
          const delay = retryDelay(entry.backoff.next(), errInfo.retryAfterSeconds);
          log.warn('subnet state publish failed', {
            subnet: name,
            error: errInfo.message,
            retryInMs: delay,
          });
          if (!this.stopped) {
            entry.retryTimer = this.options.clock.setTimeout(() => {
              entry.retryTimer = undefined;
              this.flush(name, entry);
            }, delay);
          }
        },
      )
      .finally(() => {
        entry.writing = false;
        this.inFlight.delete(write);
        this.flush(name, entry);
      });
    this.inFlight.add(write);
  }
}
