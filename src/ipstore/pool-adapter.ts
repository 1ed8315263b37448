// The monitor's view of the store (PoolIpStore, src/monitor/ports.ts), the
// one complete port: the sidecar and `simulate` both build it here. The
// synchronous store behind promises, so a throw becomes a rejection.
import type { PoolIpStore } from '../monitor/ports.ts';
import type { NodeIpStore } from './types.ts';

export function asPoolIpStore(store: NodeIpStore): PoolIpStore {
  return {
    // One transaction: the ids and both counts are of one instant. Backed
    // IPs only count as active: an Assigned IP the status no longer backs is
    // no surplus (marking for it would release and re-allocate one IP forever).
    view: () => Promise.resolve().then(() => store.poolView()),
    markPendingRelease: (count: number) =>
      Promise.resolve().then(() => store.markPendingRelease(count)),
  };
}
