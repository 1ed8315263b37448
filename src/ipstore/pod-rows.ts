// The store's operations that follow the pods rather than the CNI: a
// recreated sandbox's older assignment released, a leaked IP reclaimed only
// while the holder the caller saw still holds it, and an address a pod
// reports adopted. Each runs inside the caller's transaction.
import { ipSortKey } from './address.ts';
import {
  asReleased,
  freeInterface,
  freeRow,
  SELECT_IP,
  toRecord,
  type IpRow,
  type Sql,
} from './rows.ts';
import type {
  AdoptRequest,
  AdoptResult,
  AssignRequest,
  Holder,
  IpRecord,
  Released,
} from './types.ts';
import { ADOPTED_SANDBOX } from './types.ts';

/**
 * Releases pod ns/name's assignments under any infraContainerID other than
 * the request's (the kubelet runs one sandbox per pod); returns them as they
 * were. A request without a pod name identifies no pod: nothing is released.
 */
export function releaseOlderSandboxes(sql: Sql, req: AssignRequest, now: number): IpRecord[] {
  if (req.podName === '') return [];
  const rows = sql(
    `${SELECT_IP} WHERE pod_name = ? AND pod_namespace = ? AND infra_container_id <> ?
     AND pod_interface_id <> ? ORDER BY ip_key`,
  ).all(
    req.podName,
    req.podNamespace,
    req.infraContainerID,
    req.podInterfaceID,
  ) as unknown as IpRow[];
  for (const row of rows) freeRow(sql, row, now);
  return rows.map(toRecord);
}

/**
 * Frees IP `id` and the rest of its assignment (the pod interface's address
 * of the other family: no half pod is left) while `holder` holds it;
 * undefined otherwise.
 */
export function reclaimRow(
  sql: Sql,
  id: string,
  holder: Holder,
  now: number,
): Released | undefined {
  const row = sql(
    `${SELECT_IP} WHERE id = ? AND pod_interface_id = ? AND infra_container_id = ?`,
  ).get(id, holder.podInterfaceID, holder.infraContainerID) as IpRow | undefined;
  if (row === undefined) return undefined;
  return asReleased(freeInterface(sql, holder.podInterfaceID, now));
}

/** The pod interface id an adopted address is recorded under: unique per pod and address. */
export function adoptedInterfaceId(podNamespace: string, podName: string, ip: string): string {
  return `${ADOPTED_SANDBOX}:${podNamespace}/${podName}/${ip}`;
}

/** Assigns the address to the pod that reports it, unless another pod holds it. */
export function adoptRow(sql: Sql, req: AdoptRequest, now: number): AdoptResult {
  const row = sql(`${SELECT_IP} WHERE ip_key = ?`).get(ipSortKey(req.ip)) as IpRow | undefined;
  if (row === undefined) return { outcome: 'unknown' };
  if (row.state === 'Assigned') {
    if (row.pod_name === req.podName && row.pod_namespace === req.podNamespace) {
      return { outcome: 'held', record: toRecord(row) };
    }
    const expected =
      req.from !== undefined &&
      row.pod_interface_id === req.from.podInterfaceID &&
      row.infra_container_id === req.from.infraContainerID;
    if (!expected) return { outcome: 'conflict', record: toRecord(row) };
  }
  const adopted: IpRow = {
    ...row,
    state: 'Assigned',
    pod_interface_id: adoptedInterfaceId(req.podNamespace, req.podName, row.ip),
    infra_container_id: ADOPTED_SANDBOX,
    pod_name: req.podName,
    pod_namespace: req.podNamespace,
    updated_at: now,
  };
  sql(
    `UPDATE ips SET state = 'Assigned', pod_interface_id = ?, infra_container_id = ?, pod_name = ?,
       pod_namespace = ?, updated_at = ? WHERE id = ?`,
  ).run(
    adopted.pod_interface_id,
    adopted.infra_container_id,
    adopted.pod_name,
    adopted.pod_namespace,
    now,
    row.id,
  );
  return { outcome: 'adopted', record: toRecord(adopted), previous: toRecord(row) };
}
