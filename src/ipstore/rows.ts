// The store's rows as SQLite holds them, and the row operations more than
// one store method needs. Everything here runs inside a transaction the
// caller (sqlite-store.ts) opened; `Sql` hands out its cached statements.
import type { StatementSync } from 'node:sqlite';
import type { IpFamily } from '../nnc/family.ts';
import { IP_FAMILIES } from '../nnc/family.ts';
import type { ContainerInfo, IpRecord, IpState, Released } from './types.ts';

export type Sql = (text: string) => StatementSync;

export interface IpRow {
  id: string;
  ip: string;
  ip_key: string;
  /** 4 or 6, from the address's text (schema version 3). */
  family: IpFamily;
  nc_id: string;
  state: IpState;
  pod_interface_id: string | null;
  infra_container_id: string | null;
  pod_name: string | null;
  pod_namespace: string | null;
  backed: number;
  updated_at: number;
}

export interface ContainerRow {
  id: string;
  subnet_address_space: string;
  default_gateway: string;
  primary_ip: string;
  family: IpFamily | null;
  backed: number;
}

export const SELECT_IP = 'SELECT * FROM ips';

/** The row as the store's callers see it. */
export function toRecord(row: IpRow): IpRecord {
  const record: IpRecord = {
    id: row.id,
    ip: row.ip,
    ncId: row.nc_id,
    state: row.state,
    updatedAt: row.updated_at,
  };
  if (row.pod_interface_id !== null) {
    record.pod = {
      podInterfaceID: row.pod_interface_id,
      infraContainerID: row.infra_container_id ?? '',
      podName: row.pod_name ?? '',
      podNamespace: row.pod_namespace ?? '',
    };
  }
  if (row.backed === 0) record.vanished = true;
  return record;
}

/** The container as the store's callers see it. */
export function toContainerInfo(row: ContainerRow): ContainerInfo {
  return {
    id: row.id,
    subnetAddressSpace: row.subnet_address_space,
    defaultGateway: row.default_gateway,
    primaryIP: row.primary_ip,
    ...(row.family !== null ? { family: row.family } : {}),
  };
}

/** Rows of one pod's assignment in the order answers list them: IPv4 first. */
export function byFamily(rows: readonly IpRow[]): IpRow[] {
  return [...rows].sort((a, b) => IP_FAMILIES.indexOf(a.family) - IP_FAMILIES.indexOf(b.family));
}

/** One pod interface's records as one answer: the first's fields, and all of them. */
export function asReleased(records: readonly IpRecord[]): Released | undefined {
  const [first] = records;
  return first === undefined ? undefined : { ...first, ips: [...records] };
}

/** The families the pool has: those of the containers the status lists, IPv4 first. */
export function poolFamilies(sql: Sql): IpFamily[] {
  const rows = sql(
    'SELECT DISTINCT family FROM containers WHERE backed = 1 AND family IS NOT NULL',
  ).all() as { family: IpFamily }[];
  const have = new Set(rows.map((r) => r.family));
  return IP_FAMILIES.filter((f) => have.has(f));
}

/** Frees every row the pod interface holds (one per family); the records after. */
export function freeInterface(sql: Sql, podInterfaceID: string, now: number): IpRecord[] {
  const rows = sql(`${SELECT_IP} WHERE pod_interface_id = ?`).all(
    podInterfaceID,
  ) as unknown as IpRow[];
  return byFamily(rows).map((row) => freeRow(sql, row, now));
}

/** Drops containers the status no longer lists once no IP refers to them. */
export function dropOrphanContainers(sql: Sql): void {
  sql(
    'DELETE FROM containers WHERE backed = 0 AND NOT EXISTS (SELECT 1 FROM ips WHERE ips.nc_id = containers.id)',
  ).run();
}

/**
 * Frees an Assigned row: Available again, or removed when the NNC no longer
 * backs it (only a pod kept it). Returns the record after the change.
 */
export function freeRow(sql: Sql, row: IpRow, now: number): IpRecord {
  if (row.backed === 0) {
    sql('DELETE FROM ips WHERE id = ?').run(row.id);
    dropOrphanContainers(sql);
    return toRecord(row);
  }
  sql(
    `UPDATE ips SET state = 'Available', pod_interface_id = NULL, infra_container_id = NULL,
       pod_name = NULL, pod_namespace = NULL, updated_at = ? WHERE id = ?`,
  ).run(now, row.id);
  return toRecord({
    ...row,
    state: 'Available',
    pod_interface_id: null,
    infra_container_id: null,
    pod_name: null,
    pod_namespace: null,
    updated_at: now,
  });
}
