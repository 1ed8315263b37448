// The previous term's writes that may still land (term-fence.ts,
// docs/decisions/0022): raised with a new term's fresh lists, lowered NNC by
// NNC as each is read at a newer version, by the new term's own metadata
// patch of every NNC it listed, or when the request timeout is over.
// Until then no new address goes to a node whose NNC is fenced.
import { Backoff } from '../kube/backoff.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { apiErrorInfo } from '../kube/errors.ts';
import type { Logger } from '../log/logger.ts';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import type { AddressLedger } from './ledger.ts';
import { rvNumber, UNANSWERED_WRITE_MS } from './ledger.ts';
import type { NncLifecycleApi } from './ports.ts';
import type { ClockTimers } from '../clock/clock.ts';
import { TermFence } from './term-fence.ts';

export interface FenceKeeperDeps {
  ledger: AddressLedger;
  lifecycleApi: NncLifecycleApi;
  clock: ClockTimers;
  log: Logger;
  workers: number;
  backoff: BackoffOptions;
  random?: () => number;
  newId: () => string;
  canWrite?: () => boolean;
  /** A patched NNC as the API answered it (taken into the view). */
  observed(nnc: NodeNetworkConfig): void;
  /** A retry's wait that the end of the term cuts short. */
  pause(ms: number): Promise<void>;
  /** Nodes that waited get another go. */
  wake(): void;
}

export class FenceKeeper {
  private fence: TermFence | undefined;
  private timer: unknown;
  private logged = false;
  private readonly d: FenceKeeperDeps;

  constructor(deps: FenceKeeperDeps) {
    this.d = deps;
  }

  private versions(): { version(name: string): bigint | undefined } {
    return { version: (n) => rvNumber(this.d.ledger.nnc(n)?.metadata.resourceVersion) };
  }

  /** Every NNC as listed may still receive a write of the previous term. */
  raise(): void {
    const { ledger, clock } = this.d;
    const listed: Array<[string, bigint]> = [];
    for (const name of ledger.names()) {
      const rv = rvNumber(ledger.nnc(name)?.metadata.resourceVersion);
      if (rv !== undefined) listed.push([name, rv]);
    }
    clock.clearTimeout(this.timer);
    this.fence = new TermFence(listed, clock.now(), UNANSWERED_WRITE_MS);
    this.logged = false;
    this.timer = clock.setTimeout(() => this.d.wake(), UNANSWERED_WRITE_MS + 1);
  }

  /** The term ended. */
  lower(): void {
    this.d.clock.clearTimeout(this.timer);
    this.fence = undefined;
  }

  /** Why no new address may go to this node now, or undefined. */
  waitReason(name: string): string | undefined {
    return this.fence?.waitReason(this.versions(), this.d.clock.now(), name);
  }

  /** A node waits for the fence: said once per term. */
  noteWait(name: string, reason: string): void {
    if (this.logged) return;
    this.logged = true;
    this.d.log.warn('allocations wait', { node: name, reason });
  }

  /** An NNC changed: true when at most one fenced NNC is left (waiting nodes may go). */
  mostlyOpen(): boolean {
    const fence = this.fence;
    return (
      fence !== undefined &&
      fence.openBeyond(this.versions(), this.d.clock.now(), undefined, 1).length <= 1
    );
  }

  /**
   * The new term's first write of every NNC it listed: a metadata-only
   * patch that moves its resourceVersion, so a previous leader's status
   * write based on an older version can never land (docs/decisions/0022).
   * An NNC this fails for stays fenced until read at a newer version or the
   * request timeout is over. `current` is false once the term is over.
   */
  async moveAll(current: () => boolean): Promise<void> {
    const fence = this.fence;
    if (!fence) return;
    const d = this.d;
    const term = d.newId();
    const backoff = new Backoff(d.backoff, d.random);
    const still = (): boolean => current() && this.fence === fence;
    let names = [...d.ledger.names()];
    let moved = 0;
    const next = async (): Promise<void> => {
      for (let name = names.pop(); name !== undefined; name = names.pop()) {
        if (!still()) return;
        if (!fence.isOpen(this.versions(), d.clock.now(), name)) continue;
        try {
          if (!d.canWrite || d.canWrite()) {
            d.observed(await d.lifecycleApi.markTerm(name, term));
            moved++;
          }
        } catch (err) {
          if (apiErrorInfo(err).statusCode === 404) continue; // deleted: its deletion event comes
          d.log.warn('node network config not fenced', {
            node: name,
            error: apiErrorInfo(err).message,
          });
        }
      }
    };
    // Patches that failed are tried again (with backoff) while the fence stands.
    for (;;) {
      await Promise.all(Array.from({ length: d.workers }, next));
      names = fence.unfenced(this.versions(), d.clock.now());
      if (names.length === 0 || !still()) break;
      await d.pause(backoff.next());
      if (!still()) return;
    }
    if (still()) d.log.info('previous term fenced', { moved, term });
  }
}
