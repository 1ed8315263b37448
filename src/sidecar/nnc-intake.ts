// The sidecar's NNC intake, as Azure CNS's NNC reconciler takes each NNC:
// the node IP store's inventory follows it first (that decides what the CNI
// can be given), then the pool monitor gets it - in that order, in one step
// (onNnc), whoever else listens. The intake keeps what it saw, read by the
// NNC writer, the Events and the node API's gate: the last NNC the store
// followed, and what the watch's cache holds for the node now
// (docs/design/sidecar.md#the-data-path).
import { Subject, type Observable, type Subscription } from 'rxjs';
import type { NncFollower } from '../ipstore/follow-nnc.ts';
import type { PodFollower } from '../ipstore/follow-pods.ts';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { nncGoneReason, nncReadiness } from './waiting.ts';

/** What the intake saw of the node's NNC, as its readers see it. */
export interface NncSeen {
  /** The last NNC the store followed (Events go to it); undefined before the first. */
  current(): NodeNetworkConfig | undefined;
  /**
   * Why nothing may go by the NNC now: it is being deleted, or gone after the
   * node had one (nncGoneReason). Undefined: go ahead.
   */
  goneReason(): string | undefined;
}

export class NncIntake implements NncSeen {
  readonly #namespace: string;
  readonly #nodeName: string;
  readonly #follower: NncFollower;
  readonly #pods: PodFollower;
  readonly #toMonitor = new Subject<NodeNetworkConfig>();
  #current: NodeNetworkConfig | undefined;
  #listed: NodeNetworkConfig | undefined;
  #hadUsable = false;
  #failed = false;

  /** What the monitor is given: each NNC onNnc passes on, once the store has followed it. */
  readonly toMonitor$: Observable<NodeNetworkConfig> = this.#toMonitor.asObservable();

  constructor(opts: {
    namespace: string;
    nodeName: string;
    /** The store following the NNC: its inventory sync. */
    follower: NncFollower;
    /** The store following the pods: told when the inventory changed. */
    pods: PodFollower;
  }) {
    this.#namespace = opts.namespace;
    this.#nodeName = opts.nodeName;
    this.#follower = opts.follower;
    this.#pods = opts.pods;
  }

  /**
   * One NNC from the watch: the store follows it, then the monitor gets it.
   * Until the first usable one, an NNC the fulfiller has not finished (no
   * status, scaler or dynamic container yet) is waited for, not handed to
   * the monitor, which would warn about it. A malformed one still goes there
   * and is warned about; so is one that loses its status later (that is wrong).
   */
  onNnc(nnc: NodeNetworkConfig): void {
    this.#current = nnc;
    // What the inventory just took may be a running pod's address: adopt it now.
    if (this.#follower.follow(nnc) === 'synced') this.#pods.inventorySynced();
    if (!this.#waitedFor(nnc)) this.#toMonitor.next(nnc);
  }

  /** What the watch's cache holds for the node now, whatever it is (terminating, none). */
  onListed(nnc: NodeNetworkConfig | undefined): void {
    this.#listed = nnc;
  }

  /**
   * Takes the watch's NNCs, each through onNnc. A step that throws ends the
   * intake: the monitor gets the error as its NNC input's failure, and the
   * store follows no later NNC. The watch's end or error is the monitor's too.
   */
  take(nnc$: Observable<NodeNetworkConfig>): Subscription {
    return nnc$.subscribe({
      next: (nnc) => {
        if (this.#failed) return;
        try {
          this.onNnc(nnc);
        } catch (err) {
          this.#failed = true;
          this.#toMonitor.error(err);
        }
      },
      error: (err: unknown) => this.#toMonitor.error(err),
      complete: () => this.#toMonitor.complete(),
    });
  }

  current(): NodeNetworkConfig | undefined {
    return this.#current;
  }

  goneReason(): string | undefined {
    return nncGoneReason(
      this.#listed,
      this.#current !== undefined,
      this.#namespace,
      this.#nodeName,
    );
  }

  #waitedFor(nnc: NodeNetworkConfig): boolean {
    const kind = nncReadiness(nnc, this.#namespace, this.#nodeName).kind;
    if (kind === 'usable') this.#hadUsable = true;
    return !this.#hadUsable && kind === 'waiting';
  }
}
