// The idle account as it is carried across a restart (docs/decisions/0034):
// the counted totals and the window's buckets of the pool, of CNS v2 and of
// each shadow fixed delay, the counters, and the delay followed. What is not
// carried is what the live observations rebuild: the CNS v2 counterfactual's
// request and status (they start where the pool starts, as at any start), the
// target's recent runs (replayed from the pool history). The time the sidecar
// was down is counted for neither side. Figures are budget-free (IP-seconds
// and counts), so a restart with another --idle-budget reads them as well.
// Parsed defensively: a record that does not read as one is ignored.
import type { IdleAccount, IdleBucket } from './idle-account.ts';
import { emptyAccount } from './idle-account.ts';
import type { ShadowBucket, Shadows } from './shadows.ts';
import { emptyShadows } from './shadows.ts';

export const CARRIED_VERSION = 1;

export interface CarriedAccount {
  version: number;
  /** When it was taken (ms, the monitor's clock). */
  savedAt: number;
  /** Counting since (ms): the first live observation, before any restart. */
  since?: number;
  held: number;
  cns: number;
  buckets: IdleBucket[];
  cnsWrites: number;
  cnsChurn: number;
  heldChurn: number;
  lagMs: number;
  following: number;
  delays: {
    seconds: number;
    idle: number;
    buckets: ShadowBucket[];
    writes: number;
    churn: number;
  }[];
  /** Restarts this account has come through. */
  resumes: number;
}

export function carryAccount(
  a: IdleAccount,
  s: Shadows,
  savedAt: number,
  resumes: number,
): CarriedAccount {
  return {
    version: CARRIED_VERSION,
    savedAt,
    ...(a.since !== undefined ? { since: a.since } : {}),
    held: a.total.held,
    cns: a.total.cns,
    buckets: a.buckets.map((b) => ({ ...b })),
    cnsWrites: a.cnsWrites,
    cnsChurn: a.cnsChurn,
    heldChurn: a.heldChurn,
    lagMs: a.lagMs,
    following: s.following,
    delays: s.delays.map((d) => ({
      seconds: d.seconds,
      idle: d.idle,
      buckets: d.buckets.map((b) => ({ ...b })),
      writes: d.writes,
      churn: d.churn,
    })),
    resumes,
  };
}

/** The account and shadows a carried record resumes from (the live parts fresh). */
export function resumeAccount(
  c: CarriedAccount,
  delaysSeconds: readonly number[],
): { account: IdleAccount; shadows: Shadows } {
  const account: IdleAccount = {
    ...emptyAccount(),
    ...(c.since !== undefined ? { since: c.since } : {}),
    total: { held: c.held, cns: c.cns },
    buckets: c.buckets.map((b) => ({ ...b })),
    cnsWrites: c.cnsWrites,
    cnsChurn: c.cnsChurn,
    heldChurn: c.heldChurn,
    lagMs: c.lagMs,
  };
  const fresh = emptyShadows(delaysSeconds);
  const delays = fresh.delays.map((d) => {
    const was = c.delays.find((x) => x.seconds === d.seconds);
    return was === undefined ? d : { ...d, ...was, buckets: was.buckets.map((b) => ({ ...b })) };
  });
  // A candidate missing from the record has counted nothing: it cannot be
  // compared with the rest, so nothing longer than what was carried is followed.
  const following = delaysSeconds.includes(c.following) ? c.following : 0;
  return { account, shadows: { ...fresh, delays, following } };
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const count = (v: unknown): v is number => finite(v) && v >= 0;

function buckets<B>(v: unknown, keys: readonly string[]): B[] | undefined {
  if (!Array.isArray(v) || v.length > 64) return undefined;
  for (const b of v) {
    if (typeof b !== 'object' || b === null) return undefined;
    const r = b as Record<string, unknown>;
    if (!finite(r.start) || !keys.every((k) => count(r[k]))) return undefined;
  }
  return (v as Record<string, number>[]).map(
    (b) => Object.fromEntries(['start', ...keys].map((k) => [k, b[k]])) as B,
  );
}

/** A carried account read back (from JSON); undefined when it does not read as one. */
export function parseCarried(value: unknown): CarriedAccount | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const c = value as Record<string, unknown>;
  if (c.version !== CARRIED_VERSION || !finite(c.savedAt)) return undefined;
  const numbers = [
    'held',
    'cns',
    'cnsWrites',
    'cnsChurn',
    'heldChurn',
    'lagMs',
    'following',
    'resumes',
  ];
  if (!numbers.every((k) => count(c[k]))) return undefined;
  if (c.since !== undefined && !finite(c.since)) return undefined;
  const own = buckets<IdleBucket>(c.buckets, ['held', 'cns']);
  if (own === undefined || !Array.isArray(c.delays) || c.delays.length > 32) return undefined;
  const delays: CarriedAccount['delays'] = [];
  for (const d of c.delays as unknown[]) {
    if (typeof d !== 'object' || d === null) return undefined;
    const r = d as Record<string, unknown>;
    const b = buckets<ShadowBucket>(r.buckets, ['idle']);
    if (!['seconds', 'idle', 'writes', 'churn'].every((k) => count(r[k])) || b === undefined) {
      return undefined;
    }
    delays.push({
      seconds: r.seconds as number,
      idle: r.idle as number,
      buckets: b,
      writes: r.writes as number,
      churn: r.churn as number,
    });
  }
  const n = (k: string): number => c[k] as number;
  return {
    version: CARRIED_VERSION,
    savedAt: n('savedAt'),
    ...(c.since !== undefined ? { since: n('since') } : {}),
    held: n('held'),
    cns: n('cns'),
    buckets: own,
    cnsWrites: n('cnsWrites'),
    cnsChurn: n('cnsChurn'),
    heldChurn: n('heldChurn'),
    lagMs: n('lagMs'),
    following: n('following'),
    delays,
    resumes: n('resumes'),
  };
}
