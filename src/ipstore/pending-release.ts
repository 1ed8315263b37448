// The release side of the pool, inside the store's transaction: marking IPs
// PendingRelease (PendingProgramming first, never Assigned), restoring the
// announced set at start (docs/decisions/0011), moving programmed IPs to
// Available, and what the pool monitor reads before each decision (the
// active and markable counts that bound its marks: docs/decisions/0016).
// The monitor counts in pods, a dual-stack pool holds each in two families:
// both are read and marked per family (familyMarks).
import type { IpFamily } from '../nnc/family.ts';
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

/** Active and markable IPs of each family that has any (see PoolView). */
interface FamilyFigures {
  family: IpFamily;
  active: number;
  markable: number;
}

function familyFigures(sql: Sql): FamilyFigures[] {
  return sql(
    `SELECT family,
       count(*) FILTER (WHERE state IN ('Available', 'PendingProgramming')
         OR (state = 'Assigned' AND backed = 1)) AS active,
       count(*) FILTER (WHERE state IN ('Available', 'PendingProgramming')) AS markable
     FROM ips GROUP BY family ORDER BY family`,
  ).all() as unknown as FamilyFigures[];
}

/**
 * How many IPs each family marks so that every family comes down to `count`
 * below the one with most active IPs: `count` of each in a level pool; a
 * family lagging behind (its subnet exhausted, its container still filling)
 * gives back only what it holds above that, never the addresses it lacks.
 */
export function familyMarks(figures: readonly { active: number }[], count: number): number[] {
  const most = Math.max(0, ...figures.map((f) => f.active));
  return figures.map((f) => Math.max(0, count - (most - f.active)));
}

/** The most `count` can be: each family can mark what familyMarks asks of it. */
function markableCount(figures: readonly FamilyFigures[]): number {
  const most = Math.max(0, ...figures.map((f) => f.active));
  return Math.min(...figures.map((f) => f.markable + (most - f.active)), Number.MAX_SAFE_INTEGER);
}

/** Marks `wanted` (in pods, see familyMarks) PendingRelease, all or nothing; the ids marked, sorted. */
export function markPending(sql: Sql, wanted: number, now: () => number): string[] {
  if (wanted === 0) return [];
  const figures = familyFigures(sql);
  const marks = familyMarks(figures, wanted);
  if (figures.length === 0 || figures.some((f, i) => f.markable < (marks[i] as number)))
    throw new InsufficientReleasableError(
      wanted,
      figures.length === 0 ? 0 : markableCount(figures),
    );
  const at = now();
  const marked: string[] = [];
  figures.forEach((f, i) => {
    const candidates = sql(
      `SELECT id FROM ips WHERE family = ? AND state IN ('PendingProgramming', 'Available')
       ORDER BY state = 'PendingProgramming' DESC, updated_at DESC, ip_key DESC LIMIT ?`,
    ).all(f.family, marks[i] as number) as { id: string }[];
    for (const row of candidates) marked.push(row.id);
  });
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

/** See NodeIpStore.poolView: in pods, the figures of a single family as they are. */
export function poolView(sql: Sql): PoolView {
  const ids = pendingReleaseIds(sql);
  const figures = familyFigures(sql);
  if (figures.length === 0) return { pendingReleaseIds: ids, activeCount: 0, markableCount: 0 };
  return {
    pendingReleaseIds: ids,
    activeCount: Math.max(...figures.map((f) => f.active)),
    markableCount: markableCount(figures),
  };
}

function setState(sql: Sql, id: string, state: IpState, now: number): void {
  sql('UPDATE ips SET state = ?, updated_at = ? WHERE id = ?').run(state, now, id);
}
