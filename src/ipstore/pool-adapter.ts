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
    // Backed IPs only: an Assigned IP the status no longer backs is no
    // surplus (marking for it would release and re-allocate one IP forever).
    activeCount: () =>
      Promise.resolve().then(() => {
        const c = store.counts();
        const vanished = store.list(['Assigned']).filter((r) => r.vanished === true).length;
        return c.Available + c.Assigned - vanished + c.PendingProgramming;
      }),
    markableCount: () =>
      Promise.resolve().then(() => {
        const c = store.counts();
        return c.Available + c.PendingProgramming;
      }),
  };
}
