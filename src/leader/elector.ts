// The leader election loop around the pure decisions of lease.ts. One attempt
// at a time: the holder renews every retry period (first optimistically over
// the record it wrote, then by read-decide-write, as client-go does); a
// candidate tries every retry period plus jitter, at the moment the lease it
// saw expires, or at once when told the lease was released (`nudge`). Told
// of every change of the Lease by a watch (`seen`), a candidate's clock for
// the holder's lease starts when the renewal happened rather than at its next
// poll, so it takes over one lease duration after the holder's last renewal. `canWrite()` is the gate every write checks:
// true only while leading and within the renew deadline of the last renewal
// that succeeded (counted from when it was SENT), so a holder that cannot
// renew stops writing before any other replica may take the lease. A timer
// at that deadline demotes it even while an attempt hangs.
import type { Clock } from '../clock/clock.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { LeaseRecord, LeaseState, LeaseTimings, Observation } from './lease.ts';
import { JITTER_FACTOR, decide, observe, released, renewal, validateTimings } from './lease.ts';

export interface LeaseApi {
  /** The lease, or undefined when it does not exist (404). */
  get(): Promise<LeaseState | undefined>;
  /** Creates it; 409 when it exists. */
  create(record: LeaseRecord): Promise<LeaseState>;
  /** Replaces it; 409 unless `resourceVersion` is current. */
  update(record: LeaseRecord, resourceVersion: string): Promise<LeaseState>;
}

export interface LeaderElectorOptions {
  identity: string;
  api: LeaseApi;
  timings: LeaseTimings;
  clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  logger: Logger;
  random?: () => number;
  onStartedLeading: () => void;
  /** Told at once when leadership ends; awaited by stop() before the lease is released. */
  onStoppedLeading: () => void | Promise<void>;
  /** Longest wait for one attempt (default max(retry, renew deadline / 2)). */
  attemptTimeoutMs?: number;
}

export class LeaderElector {
  private readonly o: LeaderElectorOptions;
  private observation: Observation | undefined;
  /** The record this replica last wrote, with its resourceVersion. */
  private own: LeaseState | undefined;
  private renewedAt = -Infinity;
  private isLeading = false;
  private stopped = false;
  private started = false;
  private attempt: Promise<void> | undefined;
  private seq = 0;
  private nextTimer: unknown;
  private deadlineTimer: unknown;
  private lastHolder: string | undefined;
  /** The last resourceVersions seen of the Lease, in the order seen (the newest last). */
  private versionsSeen: string[] = [];
  private stepDown: Promise<void> = Promise.resolve();

  constructor(options: LeaderElectorOptions) {
    validateTimings(options.timings);
    this.o = options;
  }

  get identity(): string {
    return this.o.identity;
  }

  get leading(): boolean {
    return this.isLeading;
  }

  /** The write gate: leading, and the last renewal is younger than the renew deadline. */
  canWrite(): boolean {
    return this.isLeading && this.o.clock.now() < this.renewedAt + this.o.timings.renewDeadlineMs;
  }

  /** The holder seen last ('' when released; undefined before the first read). */
  get holder(): string | undefined {
    return this.lastHolder;
  }

  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.run();
  }

  /**
   * The Lease as a watch delivered it. A version seen before that is not the
   * latest seen is older (resourceVersions are only ever compared for
   * equality, docs/decisions/0036): ignored. One never seen may still be
   * older than an answer the watch has not reached: it can only delay a
   * takeover, since every attempt reads the Lease afresh before it writes.
   */
  seen(state: LeaseState): void {
    if (this.stopped) return;
    const at = this.versionsSeen.lastIndexOf(state.resourceVersion);
    if (at >= 0 && at < this.versionsSeen.length - 1) return;
    this.see(state, this.o.clock.now());
    if (state.record.holderIdentity === '') this.nudge();
  }

  /** Try now rather than at the next period (the lease was seen released). */
  nudge(): void {
    if (!this.started || this.stopped || this.isLeading || this.attempt) return;
    this.o.clock.clearTimeout(this.nextTimer);
    this.run();
  }

  /**
   * Stops the loop. A holder steps down first (onStoppedLeading is awaited:
   * nothing writes any more), then, with `release`, writes the lease free.
   */
  async stop(release = true): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const clock = this.o.clock;
    clock.clearTimeout(this.nextTimer);
    clock.clearTimeout(this.deadlineTimer);
    const wasLeading = this.isLeading;
    if (wasLeading) this.lose('stopping', 'info');
    await this.stepDown;
    await this.attempt?.catch(() => {});
    if (!release || !wasLeading || !this.own) return;
    try {
      await this.timed(
        this.o.api.update(released(this.own.record, clock.now()), this.own.resourceVersion),
      );
      this.o.logger.info('lease released', { identity: this.o.identity });
    } catch (err) {
      this.o.logger.warn('lease release failed', { error: apiErrorInfo(err).message });
    }
  }

  private run(): void {
    const seq = ++this.seq;
    const sentAt = this.o.clock.now();
    const attempt = this.timed(this.tryAcquireOrRenew(sentAt, seq)).then(
      (ok) => this.settle(seq, sentAt, ok),
      (err: unknown) => {
        this.o.logger.debug('lease attempt failed', { error: apiErrorInfo(err).message });
        this.settle(seq, sentAt, false);
      },
    );
    this.attempt = attempt;
    void attempt.finally(() => {
      if (this.attempt === attempt) this.attempt = undefined;
    });
  }

  private settle(seq: number, sentAt: number, ok: boolean): void {
    if (this.stopped || seq !== this.seq) return;
    const { clock, timings } = this.o;
    if (ok) {
      this.renewedAt = sentAt;
      clock.clearTimeout(this.deadlineTimer);
      const left = sentAt + timings.renewDeadlineMs - clock.now();
      this.deadlineTimer = clock.setTimeout(
        () => this.lose('renew deadline passed'),
        Math.max(0, left),
      );
      if (!this.isLeading && left > 0) {
        this.isLeading = true;
        this.o.logger.info('leadership acquired', { identity: this.o.identity });
        this.o.onStartedLeading();
      }
    } else if (this.isLeading && clock.now() >= this.renewedAt + timings.renewDeadlineMs) {
      this.lose('renew deadline passed');
    }
    const jitter = this.isLeading ? 0 : (this.o.random ?? Math.random)() * JITTER_FACTOR;
    let delay = timings.retryPeriodMs * (1 + jitter);
    // A candidate also tries the moment the lease it sees would expire.
    const expiry = this.isLeading ? undefined : this.expiry();
    const now = clock.now();
    if (expiry !== undefined && expiry > now) delay = Math.min(delay, expiry - now + 1);
    this.nextTimer = clock.setTimeout(() => this.run(), delay);
  }

  /** When another holder's lease, as observed, expires (undefined: not held by another). */
  private expiry(): number | undefined {
    const o = this.observation;
    const holder = o?.record.holderIdentity;
    if (!o || !holder || holder === this.o.identity) return undefined;
    return o.observedAt + o.record.leaseDurationSeconds * 1000;
  }

  private lose(why: string, level: 'warn' | 'info' = 'warn'): void {
    if (!this.isLeading) return;
    this.isLeading = false;
    this.o.clock.clearTimeout(this.deadlineTimer);
    this.o.logger[level]('leadership lost', { identity: this.o.identity, reason: why });
    const previous = this.stepDown;
    this.stepDown = previous.then(async () => {
      await this.o.onStoppedLeading();
    });
  }

  /** One attempt: true when this replica holds the lease afterwards. */
  private async tryAcquireOrRenew(now: number, seq: number): Promise<boolean> {
    const { api, identity, timings } = this.o;
    // Fast path: the holder writes over what it wrote last.
    if (this.isLeading && this.own) {
      try {
        this.own = await api.update(renewal(this.own.record, now), this.own.resourceVersion);
        this.see(this.own, now);
        return true;
      } catch (err) {
        this.o.logger.debug('lease renewal conflicted, reading it', {
          error: apiErrorInfo(err).message,
        });
      }
    }
    const current = await api.get();
    if (seq !== this.seq) return false;
    if (current) this.see(current, now);
    const decision = decide(identity, current, this.observation, now, timings);
    if (decision.kind === 'held') return false;
    const written =
      decision.kind === 'create'
        ? await api.create(decision.record)
        : await api.update(decision.record, decision.resourceVersion);
    this.own = written;
    this.see(written, now);
    return true;
  }

  private see(state: LeaseState, now: number): void {
    this.versionsSeen = [...this.versionsSeen.slice(-7), state.resourceVersion];
    this.observation = observe(this.observation, state, now);
    const holder = state.record.holderIdentity;
    if (holder !== this.lastHolder) {
      this.lastHolder = holder;
      if (holder !== this.o.identity)
        this.o.logger.info('lease holder', { holder: holder || '(released)' });
    }
  }

  private timed<T>(p: Promise<T>): Promise<T> {
    const { clock, timings } = this.o;
    const ms =
      this.o.attemptTimeoutMs ?? Math.max(timings.retryPeriodMs, timings.renewDeadlineMs / 2);
    return new Promise<T>((resolve, reject) => {
      const timer = clock.setTimeout(
        () => reject(new Error(`lease request timed out after ${ms} ms`)),
        ms,
      );
      p.then(
        (v) => {
          clock.clearTimeout(timer);
          resolve(v);
        },
        (err: unknown) => {
          clock.clearTimeout(timer);
          reject(err as Error);
        },
      );
    });
  }
}
