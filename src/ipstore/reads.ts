// The store's reads that change nothing, inside its transaction: the count of
// IPs per state, a container's data for the CNI's answer, and SQLite's own
// checks and durability settings (the synchronous level: docs/decisions/0003,
// 0005).
import type { DatabaseSync } from 'node:sqlite';
import { IP_FAMILIES, type IpFamily } from '../nnc/family.ts';
import { poolFamilies, toContainerInfo, type ContainerRow, type Sql } from './rows.ts';
import type { ContainerInfo, FamilyCounts, IpState, StateCounts } from './types.ts';

const zero = (): StateCounts => ({
  Available: 0,
  Assigned: 0,
  PendingRelease: 0,
  PendingProgramming: 0,
});

export function stateCounts(sql: Sql): StateCounts {
  const counts = zero();
  for (const row of sql('SELECT state, count(*) AS n FROM ips GROUP BY state').all() as {
    state: IpState;
    n: number;
  }[]) {
    counts[row.state] = row.n;
  }
  return counts;
}

/**
 * The counts of each family the pool has, and of any other family whose
 * addresses pods still hold (a family the status dropped), IPv4 first.
 */
export function familyCounts(sql: Sql): FamilyCounts[] {
  const byFamily = new Map<IpFamily, StateCounts>(poolFamilies(sql).map((f) => [f, zero()]));
  for (const row of sql(
    'SELECT family, state, count(*) AS n FROM ips GROUP BY family, state',
  ).all() as { family: IpFamily; state: IpState; n: number }[]) {
    let counts = byFamily.get(row.family);
    if (counts === undefined) byFamily.set(row.family, (counts = zero()));
    counts[row.state] = row.n;
  }
  return IP_FAMILIES.filter((f) => byFamily.has(f)).map((family) => ({
    family,
    counts: byFamily.get(family) as StateCounts,
  }));
}

export function containerInfo(sql: Sql, ncId: string): ContainerInfo | undefined {
  const row = sql('SELECT * FROM containers WHERE id = ?').get(ncId) as ContainerRow | undefined;
  return row === undefined ? undefined : toContainerInfo(row);
}

/** SQLite's own checks (integrity, foreign keys): a list of problems, empty when sound. */
export function integrityProblems(db: DatabaseSync): string[] {
  const problems = (db.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[])
    .map((r) => r.integrity_check)
    .filter((text) => text !== 'ok');
  for (const row of db.prepare('PRAGMA foreign_key_check').all()) {
    problems.push(`foreign key violation: ${JSON.stringify(row)}`);
  }
  return problems;
}

/** The journal mode and synchronous level this connection runs with. */
export function durabilityOf(db: DatabaseSync): { journalMode: string; synchronous: string } {
  const journal = db.prepare('PRAGMA journal_mode').get() as { journal_mode: string };
  const sync = db.prepare('PRAGMA synchronous').get() as { synchronous: number };
  const names = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
  return {
    journalMode: journal.journal_mode,
    synchronous: names[sync.synchronous] ?? String(sync.synchronous),
  };
}
