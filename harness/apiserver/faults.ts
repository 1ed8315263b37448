// Fault injection for other parts' integration tests: make the next N
// requests matching a verb/resource fail with a given status (429 with
// Retry-After, 500, 409), drop live watches, or forget history so resumes
// get 410 Gone. A policy (the embedded chaos harness) may decide on every
// request that no counted fault matched. A fault `afterCommit` lets the
// request be served and then answers the error instead (a timeout after
// etcd committed: the write landed, its answer is lost). A fault with
// `holdMs` as well answers its error at once and applies the write that much
// later: kube-apiserver's timeout filter answers 504 when a request's
// deadline passes and lets the handler go on ("post-timeout activity",
// k8s.io/apiserver/pkg/server/filters/timeout.go,
// https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apiserver/pkg/server/filters/timeout.go),
// so a write can be applied after its client was told it timed out, and
// after that client is gone. The hold stays under kube-apiserver's default
// --request-timeout (1m0s), as the deadline of the request's context ends
// what the handler can still write.
import { ApiError } from './errors.ts';

export interface FaultSpec {
  verb: string;
  resource: string;
  subresource?: string;
  status: 409 | 429 | 500 | 503 | number;
  retryAfterSeconds?: number;
  /** How many matching requests fail; default 1. */
  times?: number;
  /** Serve the request, then answer the error instead of its result. */
  afterCommit?: boolean;
  /** With afterCommit: answer the error now, apply the request this many ms later. */
  holdMs?: number;
}

/** kube-apiserver's default --request-timeout: no held request is applied later than this. */
export const REQUEST_TIMEOUT_MS = 60_000;

/** One request as a fault policy sees it. */
export interface FaultRequest {
  verb: string;
  resource: string;
  subresource: string;
}

/** The fault to answer instead (status, Retry-After), or undefined to serve the request. */
export type FaultPolicy = (
  req: FaultRequest,
) => Pick<FaultSpec, 'status' | 'retryAfterSeconds' | 'afterCommit'> | undefined;

/** The error to answer, and whether the request is served first. */
export interface TakenFault {
  error: ApiError;
  afterCommit: boolean;
  /** Apply the request this many ms after the error was answered. */
  holdMs?: number;
}

export interface FaultInjector {
  inject(spec: FaultSpec): void;
  /** Asked about every request no injected fault matched; undefined removes it. */
  setPolicy(policy: FaultPolicy | undefined): void;
  /** Ends every live watch (of one resource plural when given); clients see the stream close. */
  dropWatches(resource?: string): number;
  /** Forgets the event history: watches resuming from any earlier version get 410 Gone. */
  compactHistory(): void;
  /** Removes pending injected faults. */
  clear(): void;
}

const REASONS: Record<number, string> = {
  409: 'Conflict',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

export class FaultTable {
  private faults: (FaultSpec & { left: number })[] = [];
  policy: FaultPolicy | undefined;

  add(spec: FaultSpec): void {
    const times = spec.times ?? 1;
    if (!Number.isInteger(times) || times < 1)
      throw new Error(`times must be a positive integer, got ${times}`);
    if (!Number.isInteger(spec.status) || spec.status < 400 || spec.status > 599)
      throw new Error(`status must be an HTTP error code, got ${spec.status}`);
    if (spec.holdMs !== undefined) {
      if (!spec.afterCommit) throw new Error('holdMs needs afterCommit: a held request is applied');
      if (!Number.isInteger(spec.holdMs) || spec.holdMs < 1 || spec.holdMs >= REQUEST_TIMEOUT_MS)
        throw new Error(
          `holdMs must be a whole number of ms below the request timeout (${REQUEST_TIMEOUT_MS}), got ${spec.holdMs}`,
        );
    }
    this.faults.push({ ...spec, left: times });
  }

  clear(): void {
    this.faults = [];
  }

  /** The error to answer instead, if an injected fault matches this request. */
  take(verb: string, resource: string, subresource: string): TakenFault | undefined {
    const f = this.faults.find(
      (x) =>
        x.verb === verb &&
        x.resource === resource &&
        (x.subresource ?? subresource) === subresource,
    );
    if (!f) {
      const p = this.policy?.({ verb, resource, subresource });
      return p ? faultError(verb, resource, p) : undefined;
    }
    f.left--;
    if (f.left <= 0) this.faults = this.faults.filter((x) => x !== f);
    return faultError(verb, resource, f);
  }
}

function faultError(
  verb: string,
  resource: string,
  f: Pick<FaultSpec, 'status' | 'retryAfterSeconds' | 'afterCommit' | 'holdMs'>,
): TakenFault {
  const details =
    f.retryAfterSeconds !== undefined ? { retryAfterSeconds: f.retryAfterSeconds } : undefined;
  const error = new ApiError(
    f.status,
    REASONS[f.status] ?? 'InternalError',
    `injected fault: ${verb} ${resource} answered ${f.status}${f.holdMs ? ` and applied ${f.holdMs} ms later` : f.afterCommit ? ' after it was applied' : ''}`,
    details,
  );
  return {
    error,
    afterCommit: f.afterCommit === true,
    ...(f.holdMs !== undefined ? { holdMs: f.holdMs } : {}),
  };
}
