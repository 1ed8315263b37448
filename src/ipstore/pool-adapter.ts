// The monitor's view of the store (PoolIpStore, src/monitor/ports.ts), the
// one complete port: the sidecar and `simulate` both build it here. The
// synchronous store behind promises, so a throw becomes a rejection.
import type { PoolIpStore } from '../monitor/ports.ts';
import type { NodeIpStore } from './types.ts';

export function asPoolIpStore(store: NodeIpStore): PoolIpStore {
  return {
    pendingReleaseIds: () => Promise.resolve().then(() => store.pendingReleaseIds()),
    markPendingRelease: (count: number) =>
      Promise.resolve().then(() => store.markPendingRelease(count)),
    activeCount: () =>
      Promise.resolve().then(() => {
        const c = store.counts();
        return c.Available + c.Assigned + c.PendingProgramming;
      }),
    markableCount: () =>
      Promise.resolve().then(() => {
        const c = store.counts();
        return c.Available + c.PendingProgramming;
      }),
  };
}
