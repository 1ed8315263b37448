// An in-memory PoolIpStore for the monitor's tests and bench/monitor.ts: ids with a state, the
// same marking rules as the node IP store (PendingProgramming first, then
// Available, never Assigned, all or nothing).
import type { PoolIpStore, StoreView } from '../../src/monitor/ports.ts';

export type MemoryIpState = 'Available' | 'Assigned' | 'PendingRelease' | 'PendingProgramming';

export class MemoryPoolStore implements PoolIpStore {
  /** id → state; insertion order is the marking order within a state. */
  readonly ips = new Map<string, MemoryIpState>();
  /** Every markPendingRelease count asked for, in order. */
  readonly markCalls: number[] = [];

  constructor(initial: Iterable<[string, MemoryIpState]> = []) {
    for (const [id, state] of initial) this.ips.set(id, state);
  }

  /** Adds `count` ids `${prefix}-${n}` in `state`. */
  add(count: number, state: MemoryIpState, prefix: string = state.toLowerCase()): string[] {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const id = `${prefix}-${this.ips.size}`;
      this.ips.set(id, state);
      ids.push(id);
    }
    return ids;
  }

  count(state: MemoryIpState): number {
    let n = 0;
    for (const s of this.ips.values()) if (s === state) n += 1;
    return n;
  }

  pendingReleaseIdsSync(): string[] {
    return [...this.ips]
      .filter(([, s]) => s === 'PendingRelease')
      .map(([id]) => id)
      .sort();
  }

  markPendingReleaseSync(count: number): string[] {
    this.markCalls.push(count);
    if (!Number.isInteger(count) || count < 0) {
      throw new RangeError(`cannot mark ${String(count)} IPs: not a non-negative integer`);
    }
    const chosen: string[] = [];
    for (const wanted of ['PendingProgramming', 'Available'] as const) {
      for (const [id, s] of this.ips) {
        if (chosen.length === count) break;
        if (s === wanted) chosen.push(id);
      }
    }
    if (chosen.length < count) {
      throw new Error(
        `cannot mark ${count} IPs PendingRelease: only ${chosen.length} are not Assigned`,
      );
    }
    for (const id of chosen) this.ips.set(id, 'PendingRelease');
    return chosen;
  }

  activeCountSync(): number {
    return this.ips.size - this.count('PendingRelease');
  }

  markableCountSync(): number {
    return this.count('Available') + this.count('PendingProgramming');
  }

  viewSync(): StoreView {
    return {
      pendingReleaseIds: this.pendingReleaseIdsSync(),
      activeCount: this.activeCountSync(),
      markableCount: this.markableCountSync(),
    };
  }

  view(): Promise<StoreView> {
    return Promise.resolve(this.viewSync());
  }

  markPendingRelease(count: number): Promise<string[]> {
    try {
      return Promise.resolve(this.markPendingReleaseSync(count));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }
}
