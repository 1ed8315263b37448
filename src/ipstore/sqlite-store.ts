// The durable node IP store on Node's built-in SQLite (`node:sqlite`): file
// `<stateDir>/ipstore.db`, or `:memory:` for simulations. Each public method
// is one transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on any error), input
// is validated before it starts, and the schema enforces the invariants (see
// schema.ts), so a crash at any instant leaves either the old or the new state.
// Which IP assign hands out, which ones markPendingRelease takes, and what
// restorePendingRelease does with the announced ids: docs/decisions/0011.
import { narrowStoreFiles, secureStoreFiles } from './file-modes.ts';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { NetworkContainer } from '../nnc/types.ts';
import { ipSortKey } from './address.ts';
import { PoolHistory } from './pool-history.ts';
import type { DatabaseOptions } from './database.ts';
import { checkStateDir, IpStoreOpenError, openDatabase } from './database.ts';
import { planInventory, type InventoryPlan } from './inventory-plan.ts';
import { adoptRow, reclaimRow, releaseOlderSandboxes } from './pod-rows.ts';
import { dropOrphanContainers, freeRow, SELECT_IP, toRecord, type IpRow } from './rows.ts';
import type {
  AdoptRequest,
  AdoptResult,
  Assignment,
  AssignRequest,
  ContainerInfo,
  Holder,
  InventoryChange,
  IpRecord,
  IpState,
  NodeIpStore,
  PoolView,
  RestoreResult,
  StateCounts,
  SyncOptions,
} from './types.ts';
import {
  DesiredIpUnavailableError,
  InvalidIpStoreInputError,
  InsufficientReleasableError,
  NoAvailableIpError,
} from './types.ts';
import { isIpAddress } from './address.ts';
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

interface ContainerRow {
  id: string;
  subnet_address_space: string;
  default_gateway: string;
  primary_ip: string;
  backed: number;
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
  /** The cached statements, for the row operations of rows.ts and pod-rows.ts. */
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
    return this.transaction(() => {
      const plan = planInventory({
        containers: backed,
        backedContainerIds: (
          this.sql('SELECT id FROM containers WHERE backed = 1').all() as { id: string }[]
        ).map((row) => row.id),
        rows: this.sql(`${SELECT_IP} ORDER BY ip_key`).all() as unknown as IpRow[],
        newState,
        now: this.now(),
      });
      this.applyInventory(plan);
      return plan.change;
    });
  }

  /** Carries out an inventory plan, in the order its steps depend on. */
  private applyInventory(plan: InventoryPlan): void {
    for (const nc of plan.containers) {
      this.sql(
        `INSERT INTO containers (id, subnet_address_space, default_gateway, primary_ip, backed)
         VALUES (?, ?, ?, ?, 1)
         ON CONFLICT (id) DO UPDATE SET subnet_address_space = excluded.subnet_address_space,
           default_gateway = excluded.default_gateway, primary_ip = excluded.primary_ip, backed = 1`,
      ).run(nc.id, nc.subnetAddressSpace, nc.defaultGateway, nc.primaryIP);
    }
    for (const id of plan.unbackContainers)
      this.sql('UPDATE containers SET backed = 0 WHERE id = ?').run(id);
    for (const r of plan.renames)
      this.sql('UPDATE ips SET id = ?, nc_id = ?, backed = 1 WHERE id = ?').run(
        r.id,
        r.ncId,
        r.from,
      );
    for (const id of plan.unback) this.sql('UPDATE ips SET backed = 0 WHERE id = ?').run(id);
    for (const id of plan.remove) this.sql('DELETE FROM ips WHERE id = ?').run(id);
    for (const r of plan.reback)
      this.sql('UPDATE ips SET nc_id = ?, backed = 1 WHERE id = ?').run(r.ncId, r.id);
    for (const row of plan.insert) {
      this.sql(
        `INSERT INTO ips (id, ip, ip_key, nc_id, state, backed, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?)`,
      ).run(row.id, row.ip, row.ip_key, row.nc_id, row.state, row.updated_at);
    }
    dropOrphanContainers(this.q);
  }

  restorePendingRelease(ids: string[]): RestoreResult {
    const wanted = new Set(validateIds(ids, 'pending release ids'));
    return this.transaction(() => {
      const now = this.now();
      const result: RestoreResult = { restored: [], unmarked: [], assigned: [], unknown: [] };
      for (const row of this.sql(`SELECT id FROM ips WHERE state = 'PendingRelease'`).all() as {
        id: string;
      }[]) {
        if (!wanted.has(row.id)) {
          this.setState(row.id, 'Available', now);
          result.unmarked.push(row.id);
        }
      }
      for (const id of wanted) {
        const row = this.sql('SELECT state FROM ips WHERE id = ?').get(id) as
          { state: IpState } | undefined;
        if (row === undefined) result.unknown.push(id);
        else if (row.state === 'Assigned') result.assigned.push(id);
        else {
          if (row.state !== 'PendingRelease') this.setState(id, 'PendingRelease', now);
          result.restored.push(id);
        }
      }
      for (const list of Object.values(result) as string[][]) list.sort();
      return result;
    });
  }

  markPendingRelease(count: number): string[] {
    const wanted = validateCount(count);
    return this.transaction(() => {
      if (wanted === 0) return [];
      const candidates = this.sql(
        `SELECT id FROM ips WHERE state IN ('PendingProgramming', 'Available')
         ORDER BY state = 'PendingProgramming' DESC, updated_at DESC, ip_key DESC`,
      ).all() as { id: string }[];
      if (candidates.length < wanted)
        throw new InsufficientReleasableError(wanted, candidates.length);
      const now = this.now();
      const marked = candidates.slice(0, wanted).map((row) => row.id);
      for (const id of marked) this.setState(id, 'PendingRelease', now);
      return marked.sort();
    });
  }

  /** Moves PendingProgramming IPs (all, or the given ids) to Available. */
  markProgrammed(ids?: string[]): string[] {
    const only = ids === undefined ? undefined : new Set(validateIds(ids, 'programmed ids'));
    return this.transaction(() => {
      const now = this.now();
      const rows = this.sql(
        `SELECT id FROM ips WHERE state = 'PendingProgramming' ORDER BY id`,
      ).all() as {
        id: string;
      }[];
      const done = rows.map((r) => r.id).filter((id) => only === undefined || only.has(id));
      for (const id of done) this.setState(id, 'Available', now);
      return done;
    });
  }

  /** The pool history kept in the same database (pool-history.ts). */
  poolHistory(): PoolHistory {
    return new PoolHistory(this.db);
  }

  poolView(): PoolView {
    return this.transaction(() => {
      const pendingReleaseIds = (
        this.sql(`SELECT id FROM ips WHERE state = 'PendingRelease' ORDER BY id`).all() as {
          id: string;
        }[]
      ).map((r) => r.id);
      const { active, markable } = this.sql(
        `SELECT
           count(*) FILTER (WHERE state IN ('Available', 'PendingProgramming')
             OR (state = 'Assigned' AND backed = 1)) AS active,
           count(*) FILTER (WHERE state IN ('Available', 'PendingProgramming')) AS markable
         FROM ips`,
      ).get() as { active: number; markable: number };
      return { pendingReleaseIds, activeCount: active, markableCount: markable };
    });
  }

  pendingReleaseIds(): string[] {
    return this.transaction(() =>
      (
        this.sql(`SELECT id FROM ips WHERE state = 'PendingRelease' ORDER BY id`).all() as {
          id: string;
        }[]
      ).map((r) => r.id),
    );
  }

  assign(request: AssignRequest): Assignment {
    const req = validateAssignRequest(request);
    const desired = req.desiredIPAddresses ?? [];
    const result = this.transaction((): Assignment | NoAvailableIpError => {
      const held = this.sql(`${SELECT_IP} WHERE pod_interface_id = ?`).get(req.podInterfaceID) as
        IpRow | undefined;
      if (held !== undefined) {
        if (desired.length > 0 && !desired.some((address) => ipSortKey(address) === held.ip_key)) {
          throw new DesiredIpUnavailableError(
            `pod interface ${req.podInterfaceID} already holds ${held.ip}, not ${desired.join(', ')}`,
          );
        }
        return toRecord(held);
      }
      const now = this.now();
      const replaced = releaseOlderSandboxes(this.q, req, now);
      let row: IpRow;
      try {
        row = desired.length > 0 ? this.desiredRow(desired) : this.leastRecentlyUsed();
      } catch (err) {
        // The older sandbox is dead whether or not the new one gets an IP.
        if (!(err instanceof NoAvailableIpError) || replaced.length === 0) throw err;
        err.replaced = replaced;
        return err;
      }
      this.sql(
        `UPDATE ips SET state = 'Assigned', pod_interface_id = ?, infra_container_id = ?, pod_name = ?,
           pod_namespace = ?, updated_at = ? WHERE id = ?`,
      ).run(req.podInterfaceID, req.infraContainerID, req.podName, req.podNamespace, now, row.id);
      const record: Assignment = toRecord({
        ...row,
        state: 'Assigned',
        pod_interface_id: req.podInterfaceID,
        infra_container_id: req.infraContainerID,
        pod_name: req.podName,
        pod_namespace: req.podNamespace,
        updated_at: now,
      });
      if (replaced.length > 0) record.replaced = replaced;
      return record;
    });
    if (result instanceof NoAvailableIpError) throw result;
    return result;
  }

  release(podInterfaceID: string): IpRecord | undefined {
    const pod = validatePodInterfaceId(podInterfaceID);
    return this.transaction(() => {
      const row = this.sql(`${SELECT_IP} WHERE pod_interface_id = ?`).get(pod) as IpRow | undefined;
      return row === undefined ? undefined : freeRow(this.q, row, this.now());
    });
  }

  reclaim(id: string, holder: Holder): IpRecord | undefined {
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
    return this.transaction(() => {
      const counts: StateCounts = {
        Available: 0,
        Assigned: 0,
        PendingRelease: 0,
        PendingProgramming: 0,
      };
      for (const row of this.sql('SELECT state, count(*) AS n FROM ips GROUP BY state').all() as {
        state: IpState;
        n: number;
      }[]) {
        counts[row.state] = row.n;
      }
      return counts;
    });
  }

  container(ncId: string): ContainerInfo | undefined {
    return this.transaction(() => {
      const row = this.sql('SELECT * FROM containers WHERE id = ?').get(ncId) as
        ContainerRow | undefined;
      if (row === undefined) return undefined;
      return {
        id: row.id,
        subnetAddressSpace: row.subnet_address_space,
        defaultGateway: row.default_gateway,
        primaryIP: row.primary_ip,
      };
    });
  }

  /** SQLite's own checks (integrity, foreign keys): a list of problems, empty when sound. */
  integrityCheck(): string[] {
    return this.transaction(() => {
      const problems = (
        this.db.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[]
      )
        .map((r) => r.integrity_check)
        .filter((text) => text !== 'ok');
      for (const row of this.db.prepare('PRAGMA foreign_key_check').all()) {
        problems.push(`foreign key violation: ${JSON.stringify(row)}`);
      }
      return problems;
    });
  }

  /** The journal mode and synchronous level this connection runs with. */
  durability(): { journalMode: string; synchronous: string } {
    return this.transaction(() => {
      const journal = this.db.prepare('PRAGMA journal_mode').get() as { journal_mode: string };
      const sync = this.db.prepare('PRAGMA synchronous').get() as { synchronous: number };
      const names = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
      return {
        journalMode: journal.journal_mode,
        synchronous: names[sync.synchronous] ?? String(sync.synchronous),
      };
    });
  }

  /** Closes the database (a WAL checkpoint happens here); idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.statements.clear();
    this.listed = undefined;
    this.db.close();
  }

  private desiredRow(desired: string[]): IpRow {
    const reasons: string[] = [];
    for (const address of desired) {
      const row = this.sql(`${SELECT_IP} WHERE ip_key = ?`).get(ipSortKey(address)) as
        IpRow | undefined;
      if (row?.state === 'Available') return row;
      reasons.push(
        row === undefined ? `${address} is not in the pool` : `${address} is ${row.state}`,
      );
    }
    throw new DesiredIpUnavailableError(`no desired IP can be assigned: ${reasons.join('; ')}`);
  }

  private leastRecentlyUsed(): IpRow {
    const row = this.sql(
      `${SELECT_IP} WHERE state = 'Available' ORDER BY updated_at, ip_key LIMIT 1`,
    ).get() as IpRow | undefined;
    if (row !== undefined) return row;
    const counts = this.sql('SELECT state, count(*) AS n FROM ips GROUP BY state').all() as {
      state: string;
      n: number;
    }[];
    const summary = counts.map((c) => `${c.n} ${c.state}`).join(', ') || 'the pool is empty';
    throw new NoAvailableIpError(`no Available IP to assign (${summary})`);
  }

  private setState(id: string, state: IpState, now: number): void {
    this.sql('UPDATE ips SET state = ?, updated_at = ? WHERE id = ?').run(state, now, id);
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
