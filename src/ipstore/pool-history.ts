// The node's pool history in the IP store's database: demand and target over
// time, as the monitor observed them. It is what `--release-delay auto` learns
// from, so what it learned survives a restart, and what /debug/pool's advice
// replays. Rows are appended in batches (one transaction each) and pruned to
// a retention window and a row cap, so the table stays bounded.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { Observation } from '../scaling/policies/policy.ts';

export const HISTORY_RETENTION_MS = 7 * 24 * 3600_000;
export const HISTORY_MAX_ROWS = 200_000;

function validRow(o: Observation): boolean {
  return (
    Number.isSafeInteger(o.at) &&
    Number.isSafeInteger(o.demand) &&
    o.demand >= 0 &&
    Number.isSafeInteger(o.target) &&
    o.target >= 0
  );
}

export class PoolHistory {
  private readonly db: DatabaseSync;
  private readonly insert: StatementSync;

  constructor(db: DatabaseSync) {
    this.db = db;
    this.insert = db.prepare('INSERT INTO pool_history (at, demand, target) VALUES (?, ?, ?)');
  }

  /** Appends observations in one transaction; rows that are not whole non-negative numbers are skipped. */
  append(rows: readonly Observation[]): number {
    const valid = rows.map((o) => ({ ...o, at: Math.round(o.at) })).filter((o) => validRow(o));
    if (valid.length === 0) return 0;
    this.db.exec('BEGIN IMMEDIATE');
    try {
      for (const o of valid) this.insert.run(o.at, o.demand, o.target);
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
    return valid.length;
  }

  /** Observations from `sinceMs` on, oldest first; at most `limit`, the most recent ones. */
  load(sinceMs: number, limit = HISTORY_MAX_ROWS): Observation[] {
    const rows = this.db
      .prepare(
        'SELECT at, demand, target FROM (SELECT rowid, at, demand, target FROM pool_history ' +
          'WHERE at >= ? ORDER BY at DESC, rowid DESC LIMIT ?) ORDER BY at, rowid',
      )
      .all(Math.floor(sinceMs), Math.max(0, Math.floor(limit))) as unknown as Observation[];
    return rows.map((r) => ({
      at: Number(r.at),
      demand: Number(r.demand),
      target: Number(r.target),
    }));
  }

  /**
   * Drops rows older than `beforeMs`, then the oldest beyond `maxRows`; returns how many went.
   * The cap is cut at one bound: the newest row beyond it, found by walking
   * the `at` index, and every row at or before it goes in one range delete.
   * A `rowid IN (subquery)` delete first gathers every doomed rowid in a
   * temporary table: cutting 300,000 rows to 200,000 that way left the process
   * 4.4 MiB larger for good, the bound 1.0 MiB, in a third of the time.
   */
  prune(beforeMs: number, maxRows = HISTORY_MAX_ROWS): number {
    const old = this.db.prepare('DELETE FROM pool_history WHERE at < ?').run(Math.floor(beforeMs));
    const edge = this.db
      .prepare(
        'SELECT at, rowid AS id FROM pool_history ORDER BY at DESC, rowid DESC LIMIT 1 OFFSET ?',
      )
      .get(Math.max(0, Math.floor(maxRows))) as { at: number; id: number } | undefined;
    if (edge === undefined) return Number(old.changes);
    const extra = this.db
      .prepare('DELETE FROM pool_history WHERE at <= ? AND (at < ? OR rowid <= ?)')
      .run(edge.at, edge.at, edge.id);
    return Number(old.changes) + Number(extra.changes);
  }

  /**
   * The idle account of `--idle-budget` as last saved (docs/decisions/0034):
   * one JSON row in `idle_account`, so the budget earned survives a restart.
   * The table is created when first used rather than by a schema migration:
   * an older sidecar (after a rollback) opens the store as before and leaves
   * the table alone, where a new schema version would make it refuse the store.
   */
  account(): IdleAccountRecord {
    return new IdleAccountRecord(this.db);
  }

  count(): number {
    const row = this.db.prepare('SELECT count(*) AS n FROM pool_history').get() as { n: number };
    return Number(row.n);
  }
}

/** The saved idle account: one row, replaced on each save. */
export class IdleAccountRecord {
  private readonly db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.db = db;
    db.exec(
      'CREATE TABLE IF NOT EXISTS idle_account (' +
        'id INTEGER PRIMARY KEY CHECK (id = 1), ' +
        'saved_at INTEGER NOT NULL, ' +
        'state TEXT NOT NULL CHECK (json_valid(state))) STRICT',
    );
  }

  /** Replaces the saved account. */
  save(savedAt: number, state: unknown): void {
    this.db
      .prepare(
        'INSERT INTO idle_account (id, saved_at, state) VALUES (1, ?, ?) ' +
          'ON CONFLICT (id) DO UPDATE SET saved_at = excluded.saved_at, state = excluded.state',
      )
      .run(Math.round(savedAt), JSON.stringify(state));
  }

  /** The account as last saved (parsed JSON), or undefined when none was. */
  load(): { savedAt: number; state: unknown } | undefined {
    const row = this.db.prepare('SELECT saved_at, state FROM idle_account WHERE id = 1').get() as
      { saved_at: number; state: string } | undefined;
    if (row === undefined) return undefined;
    return { savedAt: Number(row.saved_at), state: JSON.parse(row.state) as unknown };
  }
}
