// Leader election on a coordination.k8s.io/v1 Lease, with client-go's
// semantics (k8s.io/client-go/tools/leaderelection), as pure decisions:
// - a candidate takes the lease when it does not exist, when its holder is
//   empty (released), or when the record has not changed for the lease
//   duration as measured on the candidate's own clock from when it first saw
//   that record (never from the renewTime written by another clock);
// - every write carries the resourceVersion read (optimistic concurrency): of
//   two candidates only one can win;
// - the holder renews every retry period and steps down when it has not
//   renewed for the renew deadline, which is shorter than the lease duration:
//   it stops before anyone else may take over;
// - a release writes an empty holder with a 1 s duration, so a standby takes
//   over at its next attempt.
// Times are ms on an injected clock.

export interface LeaseTimings {
  /** How long a non-holder waits after the last change it saw (client-go LeaseDuration). */
  leaseDurationMs: number;
  /** The holder steps down when it could not renew for this long (RenewDeadline). */
  renewDeadlineMs: number;
  /** Time between attempts (RetryPeriod). */
  retryPeriodMs: number;
}

/** client-go's defaults, as kube-controller-manager and kube-scheduler use them. */
export const CLIENT_GO_TIMINGS: LeaseTimings = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/** client-go's JitterFactor: a candidate waits retry × (1 + up to 1.2) between attempts. */
export const JITTER_FACTOR = 1.2;

/** Throws a one-line error unless lease > renew deadline > 1.2 × retry > 0, as client-go requires. */
export function validateTimings(t: LeaseTimings): void {
  for (const [name, v] of Object.entries(t)) {
    if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive duration`);
  }
  if (t.leaseDurationMs <= t.renewDeadlineMs)
    throw new Error('the lease duration must be greater than the renew deadline');
  if (t.renewDeadlineMs <= JITTER_FACTOR * t.retryPeriodMs)
    throw new Error(`the renew deadline must be greater than ${JITTER_FACTOR} × the retry period`);
}

/** The Lease spec fields leader election uses. */
export interface LeaseRecord {
  /** Empty: nobody holds it (released). */
  holderIdentity: string;
  leaseDurationSeconds: number;
  /** RFC 3339 with microseconds, as Kubernetes' MicroTime. */
  acquireTime: string;
  renewTime: string;
  leaseTransitions: number;
}

export interface LeaseState {
  record: LeaseRecord;
  resourceVersion: string;
}

/** A record as first seen, on this replica's clock. */
export interface Observation {
  record: LeaseRecord;
  resourceVersion: string;
  observedAt: number;
}

export type Decision =
  | { kind: 'create'; record: LeaseRecord }
  | { kind: 'update'; record: LeaseRecord; resourceVersion: string }
  /** Another holder's lease is valid until `expiresAt` (unless renewed). */
  | { kind: 'held'; holder: string; expiresAt: number };

/** Kubernetes MicroTime: "2006-01-02T15:04:05.000000Z". */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}

/** The observation after reading `current`: its clock starts only when the record changed. */
export function observe(
  prev: Observation | undefined,
  current: LeaseState,
  now: number,
): Observation {
  if (prev && sameRecord(prev.record, current.record))
    return { ...prev, resourceVersion: current.resourceVersion };
  return { record: current.record, resourceVersion: current.resourceVersion, observedAt: now };
}

function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** What `identity` does after reading the lease (`current` undefined: it does not exist). */
export function decide(
  identity: string,
  current: LeaseState | undefined,
  observation: Observation | undefined,
  now: number,
  timings: LeaseTimings,
): Decision {
  const t = microTime(now);
  const duration = seconds(timings.leaseDurationMs);
  if (!current) {
    return {
      kind: 'create',
      record: {
        holderIdentity: identity,
        leaseDurationSeconds: duration,
        acquireTime: t,
        renewTime: t,
        leaseTransitions: 0,
      },
    };
  }
  const old = current.record;
  const mine = old.holderIdentity === identity;
  if (old.holderIdentity !== '' && !mine) {
    const since = observation?.observedAt ?? now;
    const expiresAt = since + old.leaseDurationSeconds * 1000;
    if (expiresAt > now) return { kind: 'held', holder: old.holderIdentity, expiresAt };
  }
  return {
    kind: 'update',
    resourceVersion: current.resourceVersion,
    record: {
      holderIdentity: identity,
      leaseDurationSeconds: duration,
      acquireTime: mine ? old.acquireTime : t,
      renewTime: t,
      leaseTransitions: mine ? old.leaseTransitions : old.leaseTransitions + 1,
    },
  };
}

/** The holder's renewal, written over the record it last wrote (client-go's fast path). */
export function renewal(own: LeaseRecord, now: number): LeaseRecord {
  return { ...own, renewTime: microTime(now) };
}

/** What a holder writes when it lets go: no holder, 1 s, so a standby takes it at once. */
export function released(own: LeaseRecord, now: number): LeaseRecord {
  const t = microTime(now);
  return {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: t,
    renewTime: t,
    leaseTransitions: own.leaseTransitions,
  };
}
