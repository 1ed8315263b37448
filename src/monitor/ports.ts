// The monitor's two effects, as small interfaces it owns. Adapters implement
// them: the node IP store (src/ipstore/pool-adapter.ts, for the sidecar and
// `simulate` alike), the server-side-apply NNC writer in the sidecar and the
// simulated control plane's writer in `simulate`; tests use fakes.

/**
 * What the store holds that a decision depends on: read at once, in one
 * transaction, so the three figures belong to one instant.
 */
export interface StoreView {
  /** Ids of every PendingRelease IP. */
  pendingReleaseIds: readonly string[];
  /**
   * How many IPs the NNC status backs that the store holds and that are not
   * PendingRelease (an Assigned IP the status no longer backs does not
   * count). The monitor marks `activeCount - target`, so a request that ran
   * ahead of the NNC status (or a retry after a failed write) cannot release
   * IPs twice, as in newer CNS (docs/decisions/0004), and a surplus is
   * given back (0016).
   */
  activeCount: number;
  /**
   * How many IPs could be marked PendingRelease now (Available and
   * PendingProgramming). The monitor never asks to mark more, so Assigned
   * IPs (leaked ones included) never make a scale-down fail
   * (docs/decisions/0016).
   */
  markableCount: number;
}

/** The part of the node IP store the monitor needs. */
export interface PoolIpStore {
  /** The store as one reconcile sees it: one read, one transaction. */
  view(): Promise<StoreView>;
  /**
   * Marks `count` IPs PendingRelease (PendingProgramming first, then
   * Available, never Assigned), all or nothing; resolves to the ids marked,
   * rejects and changes nothing when it cannot mark them all.
   */
  markPendingRelease(count: number): Promise<string[]>;
}

/** The spec the monitor writes: the whole of it, every time (apply semantics). */
export interface DesiredSpec {
  requestedIPCount: number;
  ipsNotInUse: string[];
}

/** What a writer may report about the object it wrote. */
export interface SpecWriteResult {
  /**
   * `metadata.generation` of the NNC after the write. The monitor treats an
   * observed NNC with a generation at or below it as its own echo (or an older
   * view), not as an out-of-band edit.
   */
  generation?: number;
}

/** Writes the NNC spec (server-side apply as `azure-cns`, force) in the sidecar. */
export interface NncSpecWriter {
  writeSpec(spec: DesiredSpec): Promise<void | SpecWriteResult>;
}

/**
 * An error a writer raises that carries what the retry policy needs: the HTTP
 * status and, for 429/503, the server's Retry-After in seconds.
 */
export class SpecWriteError extends Error {
  override readonly name = 'SpecWriteError';
  readonly statusCode: number | undefined;
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, statusCode?: number, retryAfterSeconds?: number) {
    super(message);
    this.statusCode = statusCode;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
