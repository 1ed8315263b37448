// How fresh the fulfiller's picture of the cluster is, stated (docs/design/fulfiller.md#high-availability).
// An allocation is only as safe as the view it is taken from: a standby's
// cache can be minutes old while its NNC watch waits in backoff, and a
// leader that allocated from it handed out addresses other NNCs held. So:
//   - a term starts from a fresh list of the NNCs and the Nodes, read after
//     the Lease was taken (`loaded`), never from what the watches cached;
//   - while the NNC or Node watch is not running and synced (`down`), the
//     view may miss changes: nothing is allocated, and `waitReason` says why
//     (in /readyz and in the log).
// Pure: time is passed in; the fulfiller feeds it watch events and lists.

export type ViewSource = 'nnc' | 'node';

interface Outage {
  reason: string;
  since: number;
}

/** What the view of a term was read from, for the log. */
export interface ViewStatement {
  /** The resourceVersions of the lists read after the Lease was taken. */
  nncListRv?: string;
  nodeListRv?: string;
  /** When (ms since the epoch) they were read. */
  listedAt?: number;
  /** Watches not running and synced, with why and since when. */
  down: Record<string, Outage>;
}

export class ViewFreshness {
  private readonly outages = new Map<ViewSource, Outage>();
  private listed: { nncListRv?: string; nodeListRv?: string; at: number } | undefined;

  /** The watch failed or is waiting to restart: the view may miss changes from now on. */
  down(source: ViewSource, reason: string, now: number): void {
    const before = this.outages.get(source);
    this.outages.set(source, { reason, since: before?.since ?? now });
  }

  /** The watch listed again and runs: it delivers every change from here on. */
  up(source: ViewSource): void {
    this.outages.delete(source);
  }

  /** The fresh lists of a new term were loaded. */
  loaded(nncListRv: string | undefined, nodeListRv: string | undefined, now: number): void {
    this.listed = {
      ...(nncListRv !== undefined ? { nncListRv } : {}),
      ...(nodeListRv !== undefined ? { nodeListRv } : {}),
      at: now,
    };
  }

  /** The term ended: the next one lists afresh. */
  unload(): void {
    this.listed = undefined;
  }

  get isLoaded(): boolean {
    return this.listed !== undefined;
  }

  /** Why nothing may be allocated from this view now; undefined when it is fresh. */
  waitReason(now: number): string | undefined {
    const parts: string[] = [];
    for (const source of ['nnc', 'node'] as const) {
      const o = this.outages.get(source);
      if (o)
        parts.push(
          `the ${source === 'nnc' ? 'NodeNetworkConfig' : 'Node'} watch is down since ${Math.round((now - o.since) / 1000)} s (${o.reason})`,
        );
    }
    return parts.length > 0 ? parts.join('; ') : undefined;
  }

  statement(): ViewStatement {
    return {
      ...(this.listed?.nncListRv !== undefined ? { nncListRv: this.listed.nncListRv } : {}),
      ...(this.listed?.nodeListRv !== undefined ? { nodeListRv: this.listed.nodeListRv } : {}),
      ...(this.listed ? { listedAt: this.listed.at } : {}),
      down: Object.fromEntries(this.outages),
    };
  }
}
