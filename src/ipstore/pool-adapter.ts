// The monitor's view of the store (PoolIpStore, src/monitor/ports.ts): the
// synchronous store behind promises, so a throw becomes a rejection.
import type { PoolIpStore } from '../monitor/ports.ts';
import type { NodeIpStore } from './types.ts';

export function asPoolIpStore(store: NodeIpStore): PoolIpStore {
  return {
    pendingReleaseIds: () => Promise.resolve().then(() => store.pendingReleaseIds()),
    markPendingRelease: (count: number) =>
      Promise.resolve().then(() => store.markPendingRelease(count)),
  };
}
