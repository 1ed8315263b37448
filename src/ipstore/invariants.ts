// The node IP store's invariants as one reusable check (the cluster-wide ones
// are src/sim/invariants.ts), used by the property tests,
// the kill -9 crash tests (here and the sidecar's) and anyone debugging a
// state dir. It reads only through the NodeIpStore interface, so it also
// checks fakes; SQLite's own integrity checks are added when available.
import { addressFamily } from '../nnc/family.ts';
import type { NetworkContainer } from '../nnc/types.ts';
import { dynamicContainers } from '../nnc/types.ts';
import type { IpRecord, NodeIpStore } from './types.ts';
import { IP_STATES } from './types.ts';

export interface InvariantOptions {
  /**
   * The dynamic network containers the NNC status holds now. When given, the
   * store must hold exactly their IPs, except Assigned ones that vanished.
   */
  backing?: NetworkContainer[];
  /** Conflicts the last sync reported: IPs allowed to be missing (ids). */
  allowMissing?: readonly string[];
}

/** Every violated invariant as one readable line; empty when all hold. */
export function checkStoreInvariants(store: NodeIpStore, options: InvariantOptions = {}): string[] {
  const problems: string[] = [];
  const sqliteChecks = (store as { integrityCheck?: () => string[] }).integrityCheck;
  if (typeof sqliteChecks === 'function') problems.push(...sqliteChecks.call(store));

  const records = store.list();
  const ids = new Map<string, IpRecord>();
  const addresses = new Map<string, string>();
  const pods = new Map<string, string>();
  for (const r of records) {
    if (ids.has(r.id)) problems.push(`IP id ${r.id} appears twice`);
    ids.set(r.id, r);
    const otherId = addresses.get(r.ip);
    if (otherId !== undefined)
      problems.push(`address ${r.ip} is held by both ${otherId} and ${r.id}`);
    addresses.set(r.ip, r.id);
    if (!IP_STATES.includes(r.state))
      problems.push(`IP ${r.id} is in unknown state ${String(r.state)}`);
    if ((r.state === 'Assigned') !== (r.pod !== undefined)) {
      problems.push(`IP ${r.id} is ${r.state} ${r.pod === undefined ? 'without' : 'with'} a pod`);
    }
    if (r.pod !== undefined) {
      // One address per family: a dual-stack pod interface holds two.
      const key = `${r.pod.podInterfaceID}|${addressFamily(r.ip) ?? '?'}`;
      const other = pods.get(key);
      if (other !== undefined) {
        problems.push(`pod interface ${r.pod.podInterfaceID} holds both ${other} and ${r.id}`);
      }
      pods.set(key, r.id);
    }
    if (r.vanished === true && r.state !== 'Assigned') {
      problems.push(`IP ${r.id} is ${r.state} although the NNC no longer backs it`);
    }
    if (store.container(r.ncId) === undefined)
      problems.push(`IP ${r.id} has unknown container ${r.ncId}`);
  }

  const counts = store.counts();
  let total = 0;
  for (const state of IP_STATES) {
    const listed = store.list([state]);
    const tallied = records.filter((r) => r.state === state).length;
    if (counts[state] !== tallied || listed.length !== tallied) {
      problems.push(
        `${state}: counts() says ${counts[state]}, list() has ${tallied}, list([state]) ${listed.length}`,
      );
    }
    total += counts[state];
  }
  if (total !== records.length)
    problems.push(`counts() total ${total} differs from list() length ${records.length}`);

  const pending = store.pendingReleaseIds();
  const expected = records
    .filter((r) => r.state === 'PendingRelease')
    .map((r) => r.id)
    .sort();
  if (JSON.stringify(pending) !== JSON.stringify(expected)) {
    problems.push(
      `pendingReleaseIds() ${JSON.stringify(pending)} differs from list(): ${JSON.stringify(expected)}`,
    );
  }

  if (options.backing !== undefined)
    problems.push(...checkBacking(ids, options.backing, options.allowMissing ?? []));
  return problems;
}

function checkBacking(
  ids: Map<string, IpRecord>,
  backing: NetworkContainer[],
  allowMissing: readonly string[],
): string[] {
  const problems: string[] = [];
  const nnc = { metadata: { name: 'check' }, status: { networkContainers: backing } };
  const backed = new Map<string, { ip: string; ncId: string }>();
  for (const nc of dynamicContainers(nnc)) {
    for (const a of nc.ipAssignments ?? []) backed.set(a.name, { ip: a.ip, ncId: nc.id });
  }
  for (const r of ids.values()) {
    const b = backed.get(r.id);
    const isBacked = b !== undefined && b.ip === r.ip;
    if (!isBacked && r.state !== 'Assigned')
      problems.push(`IP ${r.id} (${r.ip}) is ${r.state} but the NNC does not back it`);
    if (!isBacked && r.state === 'Assigned' && r.vanished !== true) {
      problems.push(
        `Assigned IP ${r.id} (${r.ip}) is not backed by the NNC and not flagged vanished`,
      );
    }
    if (isBacked && r.vanished === true)
      problems.push(`IP ${r.id} is backed by the NNC but flagged vanished`);
    if (isBacked && b.ncId !== r.ncId)
      problems.push(`IP ${r.id} belongs to ${b.ncId}, store says ${r.ncId}`);
  }
  for (const [id, b] of backed) {
    if (!ids.has(id) && !allowMissing.includes(id))
      problems.push(`NNC IP ${id} (${b.ip}) is missing from the store`);
  }
  return problems;
}
