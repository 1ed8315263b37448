// Handing IPs to a CNI request, inside the store's transaction: what the pod
// interface already holds, else one IP of each family the pool has (a
// desired address of that family, else the least recently used Available
// one: docs/decisions/0011), or none at all when a family has none to give
// (docs/design/contracts.md, "Address families": no half pod). A recreated
// sandbox's older assignments are released first (pod-rows.ts).
import { addressFamily, familyName, type IpFamily } from '../nnc/family.ts';
import { ipSortKey } from './address.ts';
import { releaseOlderSandboxes } from './pod-rows.ts';
import { byFamily, poolFamilies, SELECT_IP, toRecord, type IpRow, type Sql } from './rows.ts';
import type { AssignRequest, Assignment, IpRecord } from './types.ts';
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
  const held = sql(`${SELECT_IP} WHERE pod_interface_id = ?`).all(
    req.podInterfaceID,
  ) as unknown as IpRow[];
  if (held.length > 0) {
    if (desired.length > 0 && !desired.some((a) => held.some((r) => ipSortKey(a) === r.ip_key))) {
      throw new DesiredIpUnavailableError(
        `pod interface ${req.podInterfaceID} already holds ${held.map((r) => r.ip).join(', ')}, not ${desired.join(', ')}`,
      );
    }
    return assignment(byFamily(held).map(toRecord));
  }
  const at = now();
  const replaced = releaseOlderSandboxes(sql, req, at);
  let rows: IpRow[];
  try {
    rows = chooseRows(sql, desired);
  } catch (err) {
    // The older sandbox is dead whether or not the new one gets an IP.
    if (!(err instanceof NoAvailableIpError) || replaced.length === 0) throw err;
    err.replaced = replaced;
    return err;
  }
  const update = sql(
    `UPDATE ips SET state = 'Assigned', pod_interface_id = ?, infra_container_id = ?, pod_name = ?,
       pod_namespace = ?, updated_at = ? WHERE id = ?`,
  );
  const records = rows.map((row) => {
    update.run(req.podInterfaceID, req.infraContainerID, req.podName, req.podNamespace, at, row.id);
    return toRecord({
      ...row,
      state: 'Assigned',
      pod_interface_id: req.podInterfaceID,
      infra_container_id: req.infraContainerID,
      pod_name: req.podName,
      pod_namespace: req.podNamespace,
      updated_at: at,
    });
  });
  const record = assignment(records);
  if (replaced.length > 0) record.replaced = replaced;
  return record;
}

function assignment(records: IpRecord[]): Assignment {
  return { ...(records[0] as IpRecord), ips: records };
}

/**
 * One row per family of the pool, IPv4 first; throws (and so changes
 * nothing) when any family has none to give. A pool with no family known
 * yet has nothing to give either.
 */
function chooseRows(sql: Sql, desired: readonly string[]): IpRow[] {
  const families = poolFamilies(sql);
  const foreign = desired.filter((a) => !families.includes(addressFamily(a) as IpFamily));
  if (desired.length > 0 && foreign.length > 0) {
    const has = families.map(familyName).join(' and ') || 'no address family';
    throw new DesiredIpUnavailableError(
      `no desired IP can be assigned: ${foreign.join(', ')} not in the pool (it has ${has})`,
    );
  }
  if (families.length === 0) throw noneAvailable(sql, 'no Available IP to assign');
  return families.map((family) => {
    const wanted = desired.filter((a) => addressFamily(a) === family);
    return wanted.length > 0
      ? desiredRow(sql, family, wanted)
      : leastRecentlyUsed(sql, family, families);
  });
}

/** The first desired address of the family that is Available; throws with every reason otherwise. */
function desiredRow(sql: Sql, family: IpFamily, desired: string[]): IpRow {
  const reasons: string[] = [];
  for (const address of desired) {
    const row = sql(`${SELECT_IP} WHERE ip_key = ? AND family = ?`).get(
      ipSortKey(address),
      family,
    ) as IpRow | undefined;
    if (row?.state === 'Available') return row;
    reasons.push(
      row === undefined ? `${address} is not in the pool` : `${address} is ${row.state}`,
    );
  }
  throw new DesiredIpUnavailableError(`no desired IP can be assigned: ${reasons.join('; ')}`);
}

function leastRecentlyUsed(sql: Sql, family: IpFamily, families: readonly IpFamily[]): IpRow {
  const row = sql(
    `${SELECT_IP} WHERE family = ? AND state = 'Available' ORDER BY updated_at, ip_key LIMIT 1`,
  ).get(family) as IpRow | undefined;
  if (row !== undefined) return row;
  const what =
    families.length > 1 ? `no Available ${familyName(family)} address` : 'no Available IP';
  throw noneAvailable(sql, `${what} to assign`, families.length > 1);
}

/** The refusal, with what the pool holds (per family when it has two). */
function noneAvailable(sql: Sql, what: string, perFamily = false): NoAvailableIpError {
  const counts = sql(
    'SELECT family, state, count(*) AS n FROM ips GROUP BY family, state ORDER BY family, state',
  ).all() as { family: IpFamily; state: string; n: number }[];
  const summary =
    counts
      .map((c) => `${c.n} ${perFamily ? `${familyName(c.family)} ` : ''}${c.state}`)
      .join(', ') || 'the pool is empty';
  const message = `${what} (${summary})${perFamily ? ': neither family assigned' : ''}`;
  return new NoAvailableIpError(message);
}
