// The release side of the pool, inside the store's transaction: marking IPs
// PendingRelease (PendingProgramming first, never Assigned), restoring the
// announced set at start (docs/decisions/0011), moving programmed IPs to
// Available, and what the pool monitor reads before each decision (the
// active and markable counts that bound its marks: docs/decisions/0016).
import type { Sql } from './rows.ts';
import type { IpState, PoolView, RestoreResult } from './types.ts';
import { InsufficientReleasableError } from './types.ts';

/** Makes the PendingRelease set exactly `wanted` (see NodeIpStore.restorePendingRelease). */
export function restorePending(sql: Sql, wanted: Set<string>, now: () => number): RestoreResult {
  const at = now();
  const result: RestoreResult = { restored: [], unmarked: [], assigned: [], unknown: [] };
  for (const row of sql(`SELECT id FROM ips WHERE state = 'PendingRelease'`).all() as {
    id: string;
  }[]) {
    if (!wanted.has(row.id)) {
      setState(sql, row.id, 'Available', at);
      result.unmarked.push(row.id);
    }
  }
  for (const id of wanted) {
    const row = sql('SELECT state FROM ips WHERE id = ?').get(id) as { state: IpState } | undefined;
    if (row === undefined) result.unknown.push(id);
    else if (row.state === 'Assigned') result.assigned.push(id);
    else {
      if (row.state !== 'PendingRelease') setState(sql, id, 'PendingRelease', at);
      result.restored.push(id);
    }
  }
  for (const list of Object.values(result) as string[][]) list.sort();
  return result;
}

/** Marks `wanted` IPs PendingRelease, all or nothing; the ids marked, sorted. */
export function markPending(sql: Sql, wanted: number, now: () => number): string[] {
  if (wanted === 0) return [];
  const candidates = sql(
    `SELECT id FROM ips WHERE state IN ('PendingProgramming', 'Available')
     ORDER BY state = 'PendingProgramming' DESC, updated_at DESC, ip_key DESC`,
  ).all() as { id: string }[];
  if (candidates.length < wanted) throw new InsufficientReleasableError(wanted, candidates.length);
  const at = now();
  const marked = candidates.slice(0, wanted).map((row) => row.id);
  for (const id of marked) setState(sql, id, 'PendingRelease', at);
  return marked.sort();
}

/** Moves PendingProgramming IPs (all, or those in `only`) to Available. */
export function markProgrammed(
  sql: Sql,
  only: Set<string> | undefined,
  now: () => number,
): string[] {
  const at = now();
  const rows = sql(`SELECT id FROM ips WHERE state = 'PendingProgramming' ORDER BY id`).all() as {
    id: string;
  }[];
  const done = rows.map((r) => r.id).filter((id) => only === undefined || only.has(id));
  for (const id of done) setState(sql, id, 'Available', at);
  return done;
}

/** Ids of every PendingRelease IP, sorted. */
export function pendingReleaseIds(sql: Sql): string[] {
  return (
    sql(`SELECT id FROM ips WHERE state = 'PendingRelease' ORDER BY id`).all() as { id: string }[]
  ).map((r) => r.id);
}

/** See NodeIpStore.poolView. */
export function poolView(sql: Sql): PoolView {
  const ids = pendingReleaseIds(sql);
  const { active, markable } = sql(
    `SELECT
       count(*) FILTER (WHERE state IN ('Available', 'PendingProgramming')
         OR (state = 'Assigned' AND backed = 1)) AS active,
       count(*) FILTER (WHERE state IN ('Available', 'PendingProgramming')) AS markable
     FROM ips`,
  ).get() as { active: number; markable: number };
  return { pendingReleaseIds: ids, activeCount: active, markableCount: markable };
}

function setState(sql: Sql, id: string, state: IpState, now: number): void {
  sql('UPDATE ips SET state = ?, updated_at = ? WHERE id = ?').run(state, now, id);
}
