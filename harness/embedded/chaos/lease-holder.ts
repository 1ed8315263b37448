// Which fulfiller replica holds the Lease, read from the API server's store:
// the chaos plan kills "the leader", and the invariant watch counts a node
// without an NNC only while some replica leads (nothing else creates one).
import type { ApiServer } from '../../apiserver/server.ts';

/** The Lease the fulfiller replicas elect on (manifests/, src/fulfiller/run.ts). */
export const FULFILLER_LEASE = 'pool-monitor-fulfiller';

export interface LeaseSpec {
  holderIdentity?: string;
  renewTime?: string;
  leaseDurationSeconds?: number;
}

/** A replica: its name starts every leader-election identity it takes (POD_NAME). */
export interface Replica {
  name: string;
  running: boolean;
}

export function fulfillerLease(server: ApiServer, namespace: string): LeaseSpec | undefined {
  const lease = server
    .objects('coordination.k8s.io', 'leases', namespace)
    .find((l) => l.metadata?.name === FULFILLER_LEASE) as { spec?: LeaseSpec } | undefined;
  return lease?.spec;
}

/** The replica whose identity holds the Lease, live or not. */
export function leaseHolder<R extends Replica>(
  lease: LeaseSpec | undefined,
  replicas: readonly R[],
): R | undefined {
  const holder = lease?.holderIdentity ?? '';
  return replicas.find((p) => holder.startsWith(`${p.name}_`));
}

/**
 * Whether a running replica holds an unexpired Lease now. A replica killed
 * and started again under the same name counts until the dead one's Lease
 * runs out (at most a lease duration): the identity's random part is the
 * process's own, unknown here.
 */
export function someReplicaLeads(
  lease: LeaseSpec | undefined,
  replicas: readonly Replica[],
  nowMs: number,
): boolean {
  const holder = leaseHolder(lease, replicas);
  if (!lease?.renewTime || !holder?.running) return false;
  return Date.parse(lease.renewTime) + (lease.leaseDurationSeconds ?? 0) * 1000 > nowMs;
}
