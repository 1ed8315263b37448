// Opening the store's SQLite database: checks on the state dir with errors a
// person can act on, the pragmas, and the migrations.
// WAL journal with synchronous=FULL, so a commit is durable before the CNI or
// the NNC spec sees its effect (docs/decisions/0003; the embedded cluster's
// NORMAL: 0005).
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.ts';
import { errorText } from '../log/error-text.ts';

export const IPSTORE_FILE = 'ipstore.db';

/** The state dir or the database cannot be used; nothing was changed. */
export class IpStoreOpenError extends Error {
  override readonly name = 'IpStoreOpenError';
}

export type Synchronous = 'FULL' | 'NORMAL';

export interface DatabaseOptions {
  synchronous?: Synchronous;
  /** How long a transaction waits for another connection's lock. */
  busyTimeoutMs?: number;
}

/** Checks the state dir is a writable directory; returns the db file path. */
export function checkStateDir(stateDir: string): string {
  if (typeof stateDir !== 'string' || stateDir === '') {
    throw new IpStoreOpenError('the state dir must be a non-empty path');
  }
  let isDir: boolean;
  try {
    isDir = statSync(stateDir).isDirectory();
  } catch {
    throw new IpStoreOpenError(`state dir ${stateDir} does not exist (create it first)`);
  }
  if (!isDir) throw new IpStoreOpenError(`state dir ${stateDir} is not a directory`);
  try {
    accessSync(stateDir, constants.W_OK | constants.X_OK);
  } catch {
    throw new IpStoreOpenError(
      `state dir ${stateDir} is not writable (the IP store writes ${IPSTORE_FILE} and its -wal/-shm files there)`,
    );
  }
  const file = join(stateDir, IPSTORE_FILE);
  if (existsSync(file)) {
    try {
      accessSync(file, constants.R_OK | constants.W_OK);
    } catch {
      throw new IpStoreOpenError(`IP store file ${file} is not readable and writable`);
    }
  }
  return file;
}

/** Opens (creating if needed) and migrates the database at `location`. */
export function openDatabase(location: string, options: DatabaseOptions = {}): DatabaseSync {
  const synchronous = options.synchronous ?? 'FULL';
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL') {
    throw new IpStoreOpenError(`synchronous must be FULL or NORMAL, not ${String(synchronous)}`);
  }
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(location, {
      enableForeignKeyConstraints: true,
      timeout: options.busyTimeoutMs ?? 5000,
    });
  } catch (error) {
    throw new IpStoreOpenError(`cannot open IP store ${location}: ${errorText(error)}`);
  }
  try {
    prepare(db, location, synchronous);
    migrate(db, location);
    return db;
  } catch (error) {
    db.close();
    if (error instanceof IpStoreOpenError) throw error;
    throw new IpStoreOpenError(describe(location, error));
  }
}

function prepare(db: DatabaseSync, location: string, synchronous: Synchronous): void {
  if (location !== ':memory:') {
    const row = db.prepare('PRAGMA journal_mode = WAL').get() as { journal_mode?: string };
    if (row.journal_mode !== 'wal') {
      throw new IpStoreOpenError(
        `IP store ${location}: cannot switch to WAL journal (${row.journal_mode})`,
      );
    }
  }
  db.exec(`PRAGMA synchronous = ${synchronous}`);
  const check = db.prepare('PRAGMA quick_check').all() as { quick_check: string }[];
  if (check.length !== 1 || check[0]?.quick_check !== 'ok') {
    const problems = check
      .map((r) => r.quick_check)
      .slice(0, 3)
      .join('; ');
    throw new IpStoreOpenError(`IP store ${location} is corrupt: ${problems}`);
  }
}

function migrate(db: DatabaseSync, location: string): void {
  db.exec('BEGIN IMMEDIATE');
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
      .all()
      .map((r) => String((r as { name: unknown }).name));
    if (tables.length > 0 && !tables.includes('schema_version')) {
      throw new IpStoreOpenError(
        `${location} is not an IP store database (tables: ${tables.slice(0, 5).join(', ')})`,
      );
    }
    db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT');
    const row = db.prepare('SELECT max(version) AS version FROM schema_version').get() as {
      version: number | null;
    };
    const current = row.version ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new IpStoreOpenError(
        `IP store ${location} is at schema version ${current}, newer than this program's ${SCHEMA_VERSION}`,
      );
    }
    for (const migration of MIGRATIONS) {
      if (migration.version > current) db.exec(migration.sql);
    }
    if (current < SCHEMA_VERSION) {
      db.exec('DELETE FROM schema_version');
      db.prepare('INSERT INTO schema_version (version) VALUES (?)').run(SCHEMA_VERSION);
    }
    db.exec('COMMIT');
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/** SQLite's "not a database" (26) and "corrupt" (11) become one clear sentence. */
function describe(location: string, error: unknown): string {
  const code = (error as { errcode?: number }).errcode;
  const primary = (code ?? 0) & 0xff;
  if (primary === 26 || primary === 11) {
    return `IP store ${location} is corrupt or not a database (${errorText(error)}); move it aside to start empty`;
  }
  return `cannot open IP store ${location}: ${errorText(error)}`;
}
