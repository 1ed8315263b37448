// The store's rows as SQLite holds them, and the row operations more than
// one store method needs. Everything here runs inside a transaction the
// caller (sqlite-store.ts) opened; `Sql` hands out its cached statements.
import type { StatementSync } from 'node:sqlite';
import type { ContainerInfo, IpRecord, IpState } from './types.ts';

export type Sql = (text: string) => StatementSync;

export interface IpRow {
  id: string;
  ip: string;
  ip_key: string;
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
  };
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
