// Handing an IP to a CNI request, inside the store's transaction: the one the
// pod interface already holds, else a desired address, else the least
// recently used Available IP (docs/decisions/0011 on which one). A recreated
// sandbox's older assignments are released first (pod-rows.ts).
import { ipSortKey } from './address.ts';
import { releaseOlderSandboxes } from './pod-rows.ts';
import { SELECT_IP, toRecord, type IpRow, type Sql } from './rows.ts';
import type { AssignRequest, Assignment } from './types.ts';
import { DesiredIpUnavailableError, NoAvailableIpError } from './types.ts';

/**
 * See NodeIpStore.assign. A NoAvailableIpError after older sandboxes were
 * released is returned, not thrown, so the caller commits their release.
 */
export function assignRow(
  sql: Sql,
  req: AssignRequest,
  now: () => number,
): Assignment | NoAvailableIpError {
  const desired = req.desiredIPAddresses ?? [];
  const held = sql(`${SELECT_IP} WHERE pod_interface_id = ?`).get(req.podInterfaceID) as
    IpRow | undefined;
  if (held !== undefined) {
    if (desired.length > 0 && !desired.some((address) => ipSortKey(address) === held.ip_key)) {
      throw new DesiredIpUnavailableError(
        `pod interface ${req.podInterfaceID} already holds ${held.ip}, not ${desired.join(', ')}`,
      );
    }
    return toRecord(held);
  }
  const at = now();
  const replaced = releaseOlderSandboxes(sql, req, at);
  let row: IpRow;
  try {
    row = desired.length > 0 ? desiredRow(sql, desired) : leastRecentlyUsed(sql);
  } catch (err) {
    // The older sandbox is dead whether or not the new one gets an IP.
    if (!(err instanceof NoAvailableIpError) || replaced.length === 0) throw err;
    err.replaced = replaced;
    return err;
  }
  sql(
    `UPDATE ips SET state = 'Assigned', pod_interface_id = ?, infra_container_id = ?, pod_name = ?,
       pod_namespace = ?, updated_at = ? WHERE id = ?`,
  ).run(req.podInterfaceID, req.infraContainerID, req.podName, req.podNamespace, at, row.id);
  const record: Assignment = toRecord({
    ...row,
    state: 'Assigned',
    pod_interface_id: req.podInterfaceID,
    infra_container_id: req.infraContainerID,
    pod_name: req.podName,
    pod_namespace: req.podNamespace,
    updated_at: at,
  });
  if (replaced.length > 0) record.replaced = replaced;
  return record;
}

/** The first desired address that is Available; throws with every reason otherwise. */
function desiredRow(sql: Sql, desired: string[]): IpRow {
  const reasons: string[] = [];
  for (const address of desired) {
    const row = sql(`${SELECT_IP} WHERE ip_key = ?`).get(ipSortKey(address)) as IpRow | undefined;
    if (row?.state === 'Available') return row;
    reasons.push(
      row === undefined ? `${address} is not in the pool` : `${address} is ${row.state}`,
    );
  }
  throw new DesiredIpUnavailableError(`no desired IP can be assigned: ${reasons.join('; ')}`);
}

function leastRecentlyUsed(sql: Sql): IpRow {
  const row = sql(
    `${SELECT_IP} WHERE state = 'Available' ORDER BY updated_at, ip_key LIMIT 1`,
  ).get() as IpRow | undefined;
  if (row !== undefined) return row;
  const counts = sql('SELECT state, count(*) AS n FROM ips GROUP BY state').all() as {
    state: string;
    n: number;
  }[];
  const summary = counts.map((c) => `${c.n} ${c.state}`).join(', ') || 'the pool is empty';
  throw new NoAvailableIpError(`no Available IP to assign (${summary})`);
}
