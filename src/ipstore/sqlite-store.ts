// The durable node IP store on Node's built-in SQLite (`node:sqlite`): file
// `<stateDir>/ipstore.db`, or `:memory:` for simulations. Each public method
// is one transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on any error), input
// is validated before it starts, and the schema enforces the invariants (see
// schema.ts), so a crash at any instant leaves either the old or the new state.
// Which IP assign hands out, which ones markPendingRelease takes, and what
// restorePendingRelease does with the announced ids: docs/decisions/0011.
// The class is the composition: it validates, opens the transaction and
// caches the statements; the work inside is in inventory-sync.ts,
// pending-release.ts, assign.ts, pod-rows.ts and reads.ts.
import { narrowStoreFiles, secureStoreFiles } from './file-modes.ts';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { NetworkContainer } from '../nnc/types.ts';
import { isIpAddress } from './address.ts';
import { assignRow } from './assign.ts';
import type { DatabaseOptions } from './database.ts';
import { checkStateDir, IpStoreOpenError, openDatabase } from './database.ts';
import { syncRows } from './inventory-sync.ts';
import {
  markPending,
  markProgrammed,
  pendingReleaseIds,
  poolView,
  restorePending,
} from './pending-release.ts';
import { adoptRow, reclaimRow } from './pod-rows.ts';
import { PoolHistory } from './pool-history.ts';
import {
  containerInfo,
  durabilityOf,
  familyCounts,
  integrityProblems,
  stateCounts,
} from './reads.ts';
import { asReleased, freeInterface, SELECT_IP, toRecord, type IpRow } from './rows.ts';
import type {
  AdoptRequest,
  AdoptResult,
  Assignment,
  AssignRequest,
  ContainerInfo,
  FamilyCounts,
  Holder,
  InventoryChange,
  IpRecord,
  IpState,
  NodeIpStore,
  PoolView,
  Released,
  RestoreResult,
  StateCounts,
  SyncOptions,
} from './types.ts';
import { InvalidIpStoreInputError, NoAvailableIpError } from './types.ts';
import {
  validateAssignRequest,
  validateContainers,
  validateCount,
  validateIds,
  validatePodInterfaceId,
  validateStates,
  validateSyncOptions,
} from './validate.ts';

export { toRecord } from './rows.ts';

export interface IpStoreOptions extends DatabaseOptions {
  /** Directory holding `ipstore.db`; must exist and be writable. */
  stateDir?: string;
  /** An in-memory store (simulations, tests); `stateDir` must then be absent. */
  memory?: boolean;
  /** Clock for `updatedAt` (Unix ms); injected for deterministic tests. */
  now?: () => number;
}

/** Opens the store under `stateDir` (or in memory); throws IpStoreOpenError. */
export function openIpStore(options: IpStoreOptions): SqliteIpStore {
  if (options.memory === true) {
    if (options.stateDir !== undefined)
      throw new IpStoreOpenError('give either stateDir or memory, not both');
    return new SqliteIpStore(openDatabase(':memory:', options), ':memory:', options.now);
  }
  if (options.stateDir === undefined) throw new IpStoreOpenError('the IP store needs a state dir');
  const file = checkStateDir(options.stateDir);
  try {
    secureStoreFiles(file);
  } catch (error) {
    throw new IpStoreOpenError(
      `cannot make ${options.stateDir} 0700 and ${file} 0600: ${(error as Error).message}`,
    );
  }
  const db = openDatabase(file, options);
  narrowStoreFiles(file);
  return new SqliteIpStore(db, file, options.now);
}

export class SqliteIpStore implements NodeIpStore {
  /** The database file, or `:memory:`. */
  readonly location: string;
  private readonly db: DatabaseSync;
  private readonly now: () => number;
  private readonly statements = new Map<string, StatementSync>();
  /** The cached statements, for the row operations the methods hand their work to. */
  private readonly q = (text: string): StatementSync => this.sql(text);
  private closed = false;
  /** The rows the last list() read, and the change mark they were read at. */
  private listed: { mark: string; rows: IpRow[] } | undefined;

  /** Use openIpStore; this takes an already opened and migrated database. */
  constructor(db: DatabaseSync, location: string, now: () => number = Date.now) {
    this.db = db;
    this.location = location;
    this.now = now;
  }

  syncInventory(containers: NetworkContainer[], options?: SyncOptions): InventoryChange {
    const backed = validateContainers(containers);
    const newState = validateSyncOptions(options);
    return this.transaction(() => syncRows(this.q, backed, newState, this.now));
  }

  restorePendingRelease(ids: string[]): RestoreResult {
    const wanted = new Set(validateIds(ids, 'pending release ids'));
    return this.transaction(() => restorePending(this.q, wanted, this.now));
  }

  markPendingRelease(count: number): string[] {
    const wanted = validateCount(count);
    return this.transaction(() => markPending(this.q, wanted, this.now));
  }

  /** Moves PendingProgramming IPs (all, or the given ids) to Available. */
  markProgrammed(ids?: string[]): string[] {
    const only = ids === undefined ? undefined : new Set(validateIds(ids, 'programmed ids'));
    return this.transaction(() => markProgrammed(this.q, only, this.now));
  }

  /** The pool history kept in the same database (pool-history.ts). */
  poolHistory(): PoolHistory {
    return new PoolHistory(this.db);
  }

  poolView(): PoolView {
    return this.transaction(() => poolView(this.q));
  }

  pendingReleaseIds(): string[] {
    return this.transaction(() => pendingReleaseIds(this.q));
  }

  assign(request: AssignRequest): Assignment {
    const req = validateAssignRequest(request);
    // Returned, not thrown, when older sandboxes were released: they stay released.
    const result = this.transaction(() => assignRow(this.q, req, this.now));
    if (result instanceof NoAvailableIpError) throw result;
    return result;
  }

  release(podInterfaceID: string): Released | undefined {
    const pod = validatePodInterfaceId(podInterfaceID);
    return this.transaction(() => asReleased(freeInterface(this.q, pod, this.now())));
  }

  reclaim(id: string, holder: Holder): Released | undefined {
    const [ipId] = validateIds([id], 'reclaimed id');
    const podInterfaceID = validatePodInterfaceId(holder?.podInterfaceID);
    const infra = holder?.infraContainerID;
    if (typeof infra !== 'string') {
      throw new InvalidIpStoreInputError('holder.infraContainerID must be a string');
    }
    return this.transaction(() =>
      reclaimRow(this.q, ipId as string, { podInterfaceID, infraContainerID: infra }, this.now()),
    );
  }

  adopt(request: AdoptRequest): AdoptResult {
    if (!isIpAddress(request?.ip)) {
      throw new InvalidIpStoreInputError(
        `adopted address ${JSON.stringify(request?.ip)} is not an IP address`,
      );
    }
    const [podName, podNamespace] = validateIds(
      [request.podName, request.podNamespace],
      'adopting pod name and namespace',
    );
    return this.transaction(() =>
      adoptRow(
        this.q,
        { ...request, podName: podName as string, podNamespace: podNamespace as string },
        this.now(),
      ),
    );
  }

  /**
   * Every IP (of `states` when given), in address order. The pod follower
   * lists the store at each pass, mostly with nothing changed since the last
   * one: the rows are read again only when the change mark moved.
   */
  list(states?: readonly IpState[]): IpRecord[] {
    const only = validateStates(states);
    if (this.closed) throw new Error(`IP store ${this.location} is closed`);
    const mark = this.changeMark();
    let rows = this.listed?.mark === mark ? this.listed.rows : undefined;
    if (rows === undefined) {
      // One statement: a read of its own, no transaction needed (nor a write lock).
      rows = this.sql(`${SELECT_IP} ORDER BY ip_key`).all() as unknown as IpRow[];
      this.listed = { mark, rows };
    }
    return rows.filter((row) => only === undefined || only.includes(row.state)).map(toRecord);
  }

  counts(): StateCounts {
    return this.transaction(() => stateCounts(this.q));
  }

  countsByFamily(): FamilyCounts[] {
    return this.transaction(() => familyCounts(this.q));
  }

  container(ncId: string): ContainerInfo | undefined {
    return this.transaction(() => containerInfo(this.q, ncId));
  }

  /** SQLite's own checks (integrity, foreign keys): a list of problems, empty when sound. */
  integrityCheck(): string[] {
    return this.transaction(() => integrityProblems(this.db));
  }

  /** The journal mode and synchronous level this connection runs with. */
  durability(): { journalMode: string; synchronous: string } {
    return this.transaction(() => durabilityOf(this.db));
  }

  /** Closes the database (a WAL checkpoint happens here); idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.statements.clear();
    this.listed = undefined;
    this.db.close();
  }

  /**
   * Moves with every row this connection inserts, updates or deletes (SQLite's
   * total_changes(), rolled-back ones included) and every commit of another
   * connection to the file (PRAGMA data_version): equal marks, equal rows.
   */
  private changeMark(): string {
    const { n } = this.sql('SELECT total_changes() AS n').get() as { n: number };
    const { data_version: v } = this.sql('PRAGMA data_version').get() as { data_version: number };
    return `${n}/${v}`;
  }

  /** A cached prepared statement. */
  private sql(text: string): StatementSync {
    let statement = this.statements.get(text);
    if (statement === undefined) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  /** Runs `work` as one BEGIN IMMEDIATE … COMMIT; rolls back on any error. */
  private transaction<T>(work: () => T): T {
    if (this.closed) throw new Error(`IP store ${this.location} is closed`);
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }
}
