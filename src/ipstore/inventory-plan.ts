// What the node IP store must change to follow the NNC status, decided purely
// from the validated status and the store's rows (inventory-sync.ts applies
// it in the store's transaction, then drops the containers nothing refers to):
// - containers: every dynamic container of the status is kept and backed;
//   a backed one the status no longer lists is unbacked;
// - renames: an address a pod holds under an id the status no longer has,
//   but which the status lists under a new id (its network container was
//   replaced), moves to the new id and container - the pod keeps it, nothing
//   vanished, and it stays in the pool when the pod lets go of it;
// - IPs the status no longer has (or has under another address) go, unless a
//   pod holds them: then they stay, unbacked, and are reported as vanished;
// - IPs the status has are backed again (and follow their container), and new
//   ones are added in the start state, unless a pod still holds their id
//   under another address, or their address under another id (a conflict,
//   retried at the next sync).
import { ipSortKey } from './address.ts';
import { toRecord, type IpRow } from './rows.ts';
import type { InventoryChange, IpState } from './types.ts';
import type { BackedContainer, BackedIp } from './validate.ts';

export interface InventoryInput {
  /** The status's dynamic containers, validated (validateContainers). */
  containers: readonly BackedContainer[];
  /** Ids of the containers the store has as backed now. */
  backedContainerIds: readonly string[];
  /** Every IP row of the store, in address order. */
  rows: readonly IpRow[];
  /** The state a new IP starts in. */
  newState: IpState;
  now: number;
}

export interface IpRename {
  /** The id the pod holds the address under now. */
  from: string;
  id: string;
  ncId: string;
}

export interface InventoryPlan {
  /** Containers to insert or update, all backed. */
  containers: BackedContainer[];
  /** Containers the status no longer lists: unbacked. */
  unbackContainers: string[];
  renames: IpRename[];
  /** Assigned IPs the status no longer backs: kept, unbacked. */
  unback: string[];
  /** IPs to delete. */
  remove: string[];
  /** IPs to back again under their (possibly new) container. */
  reback: { id: string; ncId: string }[];
  /** Rows to insert. */
  insert: IpRow[];
  /** What the caller is told. */
  change: InventoryChange;
}

export function planInventory(input: InventoryInput): InventoryPlan {
  const wanted = new Map(
    input.containers.flatMap((nc) => nc.ips.map((ip) => [ip.id, ip] as const)),
  );
  const listed = new Set(input.containers.map((nc) => nc.id));
  const { rows, renames } = planRenames(input.rows, wanted);
  const kept = planKept(rows, wanted);
  const added = planAdded(wanted, kept.existing, input.newState, input.now);
  return {
    containers: [...input.containers],
    unbackContainers: input.backedContainerIds.filter((id) => !listed.has(id)),
    renames,
    unback: kept.unback.map((row) => row.id),
    remove: kept.removed.map((row) => row.id),
    reback: added.reback,
    insert: added.insert,
    change: {
      added: added.insert.map(toRecord),
      removed: kept.removed.map(toRecord),
      assignedVanished: kept.unback.map((row) => toRecord({ ...row, backed: 0 })),
      conflicts: added.conflicts,
    },
  };
}

/** Addresses pods hold under ids the status dropped but lists under new ones. */
function planRenames(
  rows: readonly IpRow[],
  wanted: ReadonlyMap<string, BackedIp>,
): { rows: IpRow[]; renames: IpRename[] } {
  const wantedByAddress = new Map([...wanted.values()].map((ip) => [ip.ip, ip] as const));
  const ids = new Set(rows.map((r) => r.id));
  const renames: IpRename[] = [];
  const after = rows.map((row): IpRow => {
    const renamed = wantedByAddress.get(row.ip);
    if (
      row.state !== 'Assigned' ||
      wanted.has(row.id) ||
      renamed === undefined ||
      ids.has(renamed.id)
    )
      return row;
    renames.push({ from: row.id, id: renamed.id, ncId: renamed.ncId });
    ids.delete(row.id);
    ids.add(renamed.id);
    return { ...row, id: renamed.id, nc_id: renamed.ncId, backed: 1 };
  });
  return { rows: after, renames };
}

/** Which rows stay (by id), which Assigned ones lose their backing, which go. */
function planKept(
  rows: readonly IpRow[],
  wanted: ReadonlyMap<string, BackedIp>,
): { existing: Map<string, IpRow>; unback: IpRow[]; removed: IpRow[] } {
  const existing = new Map<string, IpRow>();
  const unback: IpRow[] = [];
  const removed: IpRow[] = [];
  for (const row of rows) {
    const target = wanted.get(row.id);
    if (target !== undefined && target.ip === row.ip) existing.set(row.id, row);
    else if (row.state !== 'Assigned') removed.push(row);
    else {
      existing.set(row.id, row);
      if (row.backed === 1) unback.push(row);
    }
  }
  return { existing, unback, removed };
}

/** The status's IPs against the rows that stay: backed again, added, or in conflict. */
function planAdded(
  wanted: ReadonlyMap<string, BackedIp>,
  existing: ReadonlyMap<string, IpRow>,
  newState: IpState,
  now: number,
): Pick<InventoryPlan, 'reback' | 'insert'> & {
  conflicts: NonNullable<InventoryChange['conflicts']>;
} {
  const holders = new Map([...existing.values()].map((row) => [row.ip_key, row.id] as const));
  const reback: InventoryPlan['reback'] = [];
  const insert: IpRow[] = [];
  const conflicts: NonNullable<InventoryChange['conflicts']> = [];
  for (const ip of wanted.values()) {
    const row = existing.get(ip.id);
    if (row !== undefined) {
      if (row.ip !== ip.ip)
        conflicts.push({ ...named(ip), reason: `id is held by a pod under address ${row.ip}` });
      else if (row.nc_id !== ip.ncId || row.backed === 0) reback.push({ id: ip.id, ncId: ip.ncId });
      continue;
    }
    const key = ipSortKey(ip.ip);
    const holder = holders.get(key);
    if (holder !== undefined) {
      conflicts.push({ ...named(ip), reason: `address is held by a pod under id ${holder}` });
      continue;
    }
    holders.set(key, ip.id);
    insert.push({
      id: ip.id,
      ip: ip.ip,
      ip_key: key,
      family: ip.family,
      nc_id: ip.ncId,
      state: newState,
      pod_interface_id: null,
      infra_container_id: null,
      pod_name: null,
      pod_namespace: null,
      backed: 1,
      updated_at: now,
    });
  }
  return { reback, insert, conflicts };
}

/** An IP of the status as a conflict names it. */
function named(ip: BackedIp): { id: string; ip: string; ncId: string } {
  return { id: ip.id, ip: ip.ip, ncId: ip.ncId };
}
