// A deleted Node's quarantine ends early once no pod bound to its name is
// left (docs/design/fulfiller.md#high-availability): the pod GC deletes the pods of a node
// that is gone (after 40 s), and with none left in the API nothing on that
// machine may still be given one of its addresses. The grace period
// (--quarantine) stays the upper bound. While a node is quarantined the
// leader asks the API server for one pod with spec.nodeName set to it, every
// `intervalMs`; a failed look is tried again with backoff.
import { Backoff } from '../kube/backoff.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { ClockTimers } from '../clock/clock.ts';

export interface PodPresence {
  /** True while some pod (in any namespace) is bound to that node name. */
  anyPodOn(node: string): Promise<boolean>;
}

export interface QuarantinePodsOptions {
  presence: PodPresence;
  clock: ClockTimers;
  intervalMs: number;
  backoff: BackoffOptions;
  random?: () => number;
  log: Logger;
  /** The node is still quarantined and gone (a re-registered or freed one is not looked at). */
  wanted(node: string): boolean;
  /** No pod bound to the node is left. */
  gone(node: string): void;
}

export class QuarantinePods {
  private readonly opts: QuarantinePodsOptions;
  private readonly timers = new Map<string, unknown>();
  private readonly backoffs = new Map<string, Backoff>();

  constructor(opts: QuarantinePodsOptions) {
    this.opts = opts;
  }

  /**
   * Starts looking for the node's pods, every interval from now; idempotent.
   * The first look waits one interval too: the pod GC takes 40 s, so at
   * once they are nearly always still there.
   */
  follow(node: string): void {
    if (!this.timers.has(node)) this.schedule(node, this.opts.intervalMs);
  }

  /** Stops every look (the term ended). */
  clear(): void {
    for (const t of this.timers.values()) this.opts.clock.clearTimeout(t);
    this.timers.clear();
    this.backoffs.clear();
  }

  private schedule(node: string, ms: number): void {
    this.timers.set(
      node,
      this.opts.clock.setTimeout(() => void this.look(node), ms),
    );
  }

  private async look(node: string): Promise<void> {
    const { opts } = this;
    const handle = this.timers.get(node);
    if (!opts.wanted(node)) return this.forget(node);
    let delayMs = opts.intervalMs;
    try {
      const any = await opts.presence.anyPodOn(node);
      if (this.timers.get(node) !== handle) return; // cleared meanwhile
      if (!opts.wanted(node)) return this.forget(node);
      this.backoffs.delete(node);
      if (!any) {
        this.forget(node);
        return opts.gone(node);
      }
    } catch (err) {
      if (this.timers.get(node) !== handle) return;
      let backoff = this.backoffs.get(node);
      if (!backoff) this.backoffs.set(node, (backoff = new Backoff(opts.backoff, opts.random)));
      delayMs = backoff.next();
      opts.log.warn('pods of a quarantined node not listed', {
        node,
        error: apiErrorInfo(err).message,
        retryInMs: delayMs,
      });
    }
    this.schedule(node, delayMs);
  }

  private forget(node: string): void {
    this.timers.delete(node);
    this.backoffs.delete(node);
  }
}
