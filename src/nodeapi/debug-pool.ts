// The `/debug/pool` document: what a person needs to see why the pool has
// the size it has. Built by a pure function from whatever the monitor's
// snapshot holds plus the store's counts, so the JSON shape is fixed here and
// not by the monitor's internals. Missing figures are null, never invented.
// `ipCounts` counts every address; `families` the same per address family,
// with its subnet and whether that subnet is exhausted (a dual-stack pod
// takes one address of each family).
import type { StateCounts } from '../ipstore/types.ts';

/**
 * The monitor's snapshot (PoolMonitor.snapshot()) as this module reads it;
 * every field optional, so a partial or older snapshot still renders.
 */
export interface PoolSnapshotInput {
  ready?: boolean;
  dryRun?: boolean;
  demand?: number | undefined;
  request?: number | undefined;
  target?: number | undefined;
  exhausted?: boolean | undefined;
  /** Scaler (batch, buffer, max) and/or the raw NNC scaler fields; numbers are kept. */
  scaler?: object | undefined;
  /** Unix ms a retry is due while backing off. */
  retryAt?: number | undefined;
  consecutiveFailures?: number;
  reconciles?: number;
  writes?: number;
  /** Tuning advice from the node's recorded demand history (sidecar/advice.ts), as is. */
  advice?: object | undefined;
  /** The pool policy's view (PoolMonitor.damping()). */
  damping?:
    | {
        policy?: string;
        target?: number;
        applied?: number;
        request?: number;
        heldBack?: number;
        deferred?: boolean;
        recheckAt?: number;
        why?: { summary?: string; [key: string]: unknown };
        /** The policy's idle account against CNS v2 (policies with an idle budget). */
        account?: object;
      }
    | undefined;
  lastReconcile?:
    | {
        at?: number | string | Date;
        outcome?: string;
        delta?: number;
        error?: string;
      }
    | undefined;
}

/** One family of the pool as the sidecar sees it (src/sidecar/families.ts). */
export interface FamilyInput {
  name: string;
  subnet?: string;
  subnetAddressSpace?: string;
  exhausted: boolean;
  counts: StateCounts;
}

/** One family of the pool in the document. */
export interface DebugFamily {
  subnet: string | null;
  subnetAddressSpace: string | null;
  exhausted: boolean;
  ipCounts: StateCounts & { total: number };
}

export interface DebugPool {
  demand: number | null;
  scaler: Record<string, number> | null;
  exhausted: boolean;
  target: number | null;
  request: number | null;
  ipCounts: StateCounts & { total: number };
  /** Per address family (`IPv4`, `IPv6`), IPv4 first: each family the pool has. */
  families: Record<string, DebugFamily>;
  lastReconcile: { at: string | null; outcome: string; delta?: number; error?: string } | null;
  ready: boolean | null;
  dryRun: boolean;
  reconciles: number | null;
  writes: number | null;
  consecutiveFailures: number | null;
  retryAt: string | null;
  /** The release policy: what it holds back above the target now, and why. */
  releasePolicy: {
    policy: string;
    target: number | null;
    applied: number | null;
    request: number | null;
    heldBack: number;
    recheckAt: string | null;
    why: string | null;
    details: Record<string, unknown> | null;
    /**
     * Idle IP-seconds held vs what CNS v2 would have held on the same demand
     * (since start and over the last hour), the budget and what is left of
     * it, CNS v2's writes and churn, and the writes saved; null for a policy
     * without an idle budget.
     */
    account: Record<string, unknown> | null;
  } | null;
  /** Which batch size and release policy would have cut writes most on this node's history. */
  advice: object | null;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function iso(at: number | string | Date | undefined): string | null {
  if (at === undefined) return null;
  const d = at instanceof Date ? at : new Date(at);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

function withTotal(counts: StateCounts): StateCounts & { total: number } {
  return {
    Available: counts.Available,
    Assigned: counts.Assigned,
    PendingRelease: counts.PendingRelease,
    PendingProgramming: counts.PendingProgramming,
    total: counts.Available + counts.Assigned + counts.PendingRelease + counts.PendingProgramming,
  };
}

export function buildDebugPool(
  snapshot: PoolSnapshotInput | undefined,
  counts: StateCounts,
  families: readonly FamilyInput[] = [],
): DebugPool {
  const s = snapshot ?? {};
  let scaler: Record<string, number> | null = null;
  if (s.scaler) {
    scaler = {};
    for (const [k, v] of Object.entries(s.scaler)) {
      const n = num(v);
      if (n !== null) scaler[k] = n;
    }
  }
  const last = s.lastReconcile;
  return {
    demand: num(s.demand),
    scaler,
    exhausted: s.exhausted === true,
    target: num(s.target),
    request: num(s.request),
    ipCounts: withTotal(counts),
    families: Object.fromEntries(
      families.map((f) => [
        f.name,
        {
          subnet: f.subnet ?? null,
          subnetAddressSpace: f.subnetAddressSpace ?? null,
          exhausted: f.exhausted,
          ipCounts: withTotal(f.counts),
        },
      ]),
    ),
    lastReconcile: last
      ? {
          at: iso(last.at),
          outcome: last.outcome ?? 'unknown',
          ...(num(last.delta) !== null ? { delta: num(last.delta) as number } : {}),
          ...(last.error !== undefined ? { error: last.error } : {}),
        }
      : null,
    ready: typeof s.ready === 'boolean' ? s.ready : null,
    dryRun: s.dryRun === true,
    reconciles: num(s.reconciles),
    writes: num(s.writes),
    consecutiveFailures: num(s.consecutiveFailures),
    retryAt: s.retryAt === undefined ? null : iso(s.retryAt),
    releasePolicy: releasePolicyOf(s.damping, num(s.writes)),
    advice: s.advice ?? null,
  };
}

function releasePolicyOf(
  d: PoolSnapshotInput['damping'],
  writes: number | null,
): DebugPool['releasePolicy'] {
  if (d === undefined) return null;
  const { summary, ...details } = d.why ?? {};
  return {
    policy: typeof d.policy === 'string' ? d.policy : 'unknown',
    target: num(d.target),
    applied: num(d.applied),
    request: num(d.request),
    heldBack: num(d.heldBack) ?? 0,
    recheckAt: d.recheckAt === undefined ? null : iso(d.recheckAt),
    why:
      typeof summary === 'string' && summary !== ''
        ? summary
        : (num(d.heldBack) ?? 0) > 0
          ? 'holding back'
          : 'nothing held back: the request follows the target',
    details: Object.keys(details).length > 0 ? details : null,
    account: accountOf(d.account, writes),
  };
}

/** The account as the policy keeps it, with the monitor's writes and the writes saved next to CNS v2's. */
function accountOf(
  account: object | undefined,
  writes: number | null,
): Record<string, unknown> | null {
  if (account === undefined || account === null) return null;
  // `carry` is the account as the node store keeps it, not for reading.
  const { carry: _kept, ...a } = account as Record<string, unknown>;
  const cnsWrites = num(a.cnsV2Writes);
  const resumed = a.resumed as { from?: number; times?: number } | undefined;
  return {
    ...a,
    ...(a.since !== undefined ? { since: iso(a.since as number) } : {}),
    ...(resumed !== undefined
      ? { resumed: { from: iso(resumed.from), times: num(resumed.times) } }
      : {}),
    writes,
    writesSaved: cnsWrites !== null && writes !== null ? cnsWrites - writes : null,
  };
}

/**
 * A pool status source for the node API from a snapshot getter and the
 * store; `families` gives the per-family view (without it, none is shown).
 */
export function poolStatusSource(
  snapshot: () => PoolSnapshotInput | undefined,
  store: { counts(): StateCounts },
  families: () => readonly FamilyInput[] = () => [],
): { debugPool(): DebugPool } {
  return { debugPool: () => buildDebugPool(snapshot(), store.counts(), families()) };
}
