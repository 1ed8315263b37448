// Maps the monitor's snapshot and the node's dynamic network containers to
// the collector's PoolObservation: the labels CNS puts on its gauges come
// from the first dynamic container (subnet name and CIDR), and total_ips
// counts each distinct container primary IP, as CNS does. Given the pool
// per address family (src/sidecar/families.ts), each family gets its own
// series: its subnet's labels, exhaustion, primary IPs and counts.
import type { NetworkContainer } from '../nnc/types.ts';
import type { IdleAccountView } from '../scaling/policies/budget/idle-budget.ts';
import type { StateCounts } from '../ipstore/types.ts';
import type { FamilyObservation, PoolObservation } from './collector.ts';

/** One family of the pool, as src/sidecar/families.ts gives it. */
export interface FamilyFigures {
  name: string;
  subnet?: string;
  subnetAddressSpace?: string;
  exhausted: boolean;
  primaryIPs: number;
  counts: StateCounts;
}

/** The part of PoolMonitor.snapshot() the gauges need; all optional. */
export interface SnapshotForMetrics {
  demand?: number | undefined;
  request?: number | undefined;
  target?: number | undefined;
  exhausted?: boolean | undefined;
  scaler?: { batch?: number; max?: number } | undefined;
  /** NNC spec writes the monitor made. */
  writes?: number | undefined;
  /** The release policy's view (PoolMonitor.damping()): its idle account, when it keeps one. */
  damping?: { policy: string; account?: IdleAccountView } | undefined;
}

export function poolObservation(
  snapshot: SnapshotForMetrics,
  containers: readonly NetworkContainer[] = [],
  families: readonly FamilyFigures[] = [],
): PoolObservation {
  const first = containers[0];
  const primaries = new Set(
    containers
      .map((nc) => nc.primaryIP)
      .filter((ip): ip is string => typeof ip === 'string' && ip !== ''),
  );
  const obs: PoolObservation = {
    exhausted: snapshot.exhausted === true,
    primaryIPs: primaries.size,
  };
  if (snapshot.demand !== undefined) obs.demand = snapshot.demand;
  if (snapshot.request !== undefined) obs.request = snapshot.request;
  if (snapshot.target !== undefined) obs.target = snapshot.target;
  if (snapshot.scaler?.batch !== undefined) obs.batch = snapshot.scaler.batch;
  if (snapshot.scaler?.max !== undefined) obs.max = snapshot.scaler.max;
  if (first?.subnetName !== undefined) obs.subnet = first.subnetName;
  if (first?.subnetAddressSpace !== undefined) obs.subnetCIDR = first.subnetAddressSpace;
  if (families.length > 0) obs.families = families.map(familyObservation);
  const account = snapshot.damping?.account;
  if (account !== undefined && snapshot.damping !== undefined) {
    obs.idleAccount = { policy: snapshot.damping.policy, account, writes: snapshot.writes ?? 0 };
  }
  return obs;
}

function familyObservation(f: FamilyFigures): FamilyObservation {
  return {
    family: f.name,
    ...(f.subnet !== undefined ? { subnet: f.subnet } : {}),
    ...(f.subnetAddressSpace !== undefined ? { subnetCIDR: f.subnetAddressSpace } : {}),
    primaryIPs: f.primaryIPs,
    exhausted: f.exhausted,
    counts: { ...f.counts },
  };
}
