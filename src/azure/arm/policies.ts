// The ARM client's own pipeline policies, in the order a request meets them:
//   retry (phase Retry)  429/503 wait for Retry-After; a 429 for one busy
//                        resource holds that resource's writes, any other
//                        pauses every call of its kind (throttle-scope.ts);
//                        other 5xx and connection errors back off
//                        exponentially with jitter; bounded attempts. Polls
//                        go through here too.
//   bearer (phase Sign)  Authorization from the token source; a 401 forgets
//                        the cached token and retries once with a new one
//   token bucket         every HTTP request that leaves (reads, writes, polls,
//                        retries, the 401 retry) waits for a token of its kind
//                        (budget.ts); what ARM says is left slows that kind
//                        down before ARM would throttle it
//   operation pacing     the first poll of an operation waits for the
//                        Retry-After its write was answered with (the SDK's
//                        poller polls at once, then at Retry-After)
//   metrics              one observation per request: operation, status, time
import type { PipelinePolicy, PipelineRequest, PipelineResponse } from '@azure/core-rest-pipeline';
import { sleepOrAbort, systemClock, type Clock } from '../../clock/clock.ts';
import type { BackoffOptions } from '../../kube/backoff.ts';
import { backoffDelay } from '../../kube/backoff.ts';
import type { ArmMetricsSink } from '../metrics.ts';
import type { BearerTokenSource } from './credentials.ts';
import { armOperationOf } from './operations.ts';
import type { ArmBudget } from './budget.ts';
import { kindOf, REMAINING_HEADER, REMAINING_RESOURCE_HEADER } from './budget.ts';
import { throttleScope } from './throttle-scope.ts';

export interface RetryOptions {
  /** Retries after the first attempt (default 4). */
  maxRetries: number;
  /** 5xx and connection errors, and 429/503 without a Retry-After. */
  backoff: BackoffOptions;
  /** Longest Retry-After honoured, in ms (longer ones are capped; default 5 min). */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryOptions = {
  maxRetries: 4,
  backoff: { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.3 },
  maxRetryAfterMs: 5 * 60_000,
};

// The policies wait and pace on the clock they are given (client.ts: the
// budget's monotonic one); a Retry-After that is an HTTP date is read against
// the wall clock, systemClock, whatever that clock is.

/**
 * Milliseconds a response asks to wait: `retry-after-ms`, `x-ms-retry-after-ms`,
 * then `Retry-After` (seconds or an HTTP date). Undefined when none is usable.
 */
export function retryAfterMs(
  headers: { get(name: string): string | undefined },
  now: number,
): number | undefined {
  for (const name of ['retry-after-ms', 'x-ms-retry-after-ms']) {
    const v = Number(headers.get(name));
    if (headers.get(name) !== undefined && Number.isFinite(v) && v >= 0) return v;
  }
  const raw = headers.get('retry-after');
  if (raw === undefined) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(raw)) return Number(raw) * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const CONNECTION_CODES = new Set([
  'REQUEST_SEND_ERROR',
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

/** True for errors where no HTTP answer came back (connection reset, refused, timeout). */
export function isConnectionError(err: unknown): boolean {
  const e = err as { statusCode?: number; code?: unknown; name?: string } | undefined;
  if (e?.name === 'AbortError' || e?.statusCode !== undefined) return false;
  return typeof e?.code === 'string' && CONNECTION_CODES.has(e.code);
}

export function retryPolicy(
  options: RetryOptions,
  budget: ArmBudget,
  metrics: ArmMetricsSink,
  clock: Pick<Clock, 'now' | 'sleep'>,
  random: () => number = Math.random,
): PipelinePolicy {
  return {
    name: 'armRetryPolicy',
    async sendRequest(request: PipelineRequest, next): Promise<PipelineResponse> {
      for (let attempt = 0; ; attempt++) {
        let response: PipelineResponse | undefined;
        let failure: unknown;
        try {
          response = await next(request);
        } catch (err) {
          if (!isConnectionError(err) || attempt >= options.maxRetries) throw err;
          failure = err;
        }
        const status = response?.status;
        let waitMs: number;
        let cause: 'retry-after' | 'backoff' | 'resource-busy';
        if (failure !== undefined) {
          waitMs = backoffDelay(attempt, options.backoff, random);
          cause = 'backoff';
        } else if (status === 429 || status === 503) {
          const asked = retryAfterMs(response!.headers, systemClock.now());
          waitMs =
            asked === undefined
              ? backoffDelay(attempt, options.backoff, random)
              : Math.min(asked, options.maxRetryAfterMs);
          cause = asked === undefined ? 'backoff' : 'retry-after';
          if (status === 429) {
            const kind = kindOf(request.method);
            if (throttleScope(response!, kind, budget.floor(kind)) === 'resource') {
              // One resource busy (another operation on it, its own Compute
              // budget spent): its writes wait, every other resource's go on.
              budget.holdResource(request.url, waitMs);
              cause = 'resource-busy';
            } else {
              // The subscription (or the provider) throttles: hold every call of the kind back.
              budget.bucket(kind).pauseFor(waitMs);
            }
          }
        } else if (status !== undefined && status >= 500 && status !== 501 && status !== 505) {
          waitMs = backoffDelay(attempt, options.backoff, random);
          cause = 'backoff';
        } else {
          return response!;
        }
        if (attempt >= options.maxRetries) return response!;
        metrics.throttledWait(cause, waitMs);
        await sleepOrAbort(clock, waitMs, request.abortSignal as AbortSignal | undefined);
      }
    },
  };
}

export function tokenBucketPolicy(budget: ArmBudget, metrics: ArmMetricsSink): PipelinePolicy {
  return {
    name: 'armTokenBucketPolicy',
    async sendRequest(request, next) {
      const kind = kindOf(request.method);
      const signal = request.abortSignal as AbortSignal | undefined;
      // Compute's per-resource budget (a VM's updates) said it is low: wait first.
      const held = kind === 'write' ? await budget.resourceReady(request.url, signal) : 0;
      if (held > 0) metrics.throttledWait('quota-low', held);
      const waited = await budget.bucket(kind).take(signal);
      if (waited > 0) metrics.throttledWait('token-bucket', waited);
      const response = await next(request);
      const paused = budget.observe(kind, response.headers.get(REMAINING_HEADER[kind]));
      if (paused > 0) metrics.throttledWait('quota-low', paused);
      if (kind === 'write') {
        budget.observeResource(request.url, response.headers.get(REMAINING_RESOURCE_HEADER));
      }
      return response;
    },
  };
}

/** Operations polled at once would cost a read each for nothing; at most this many remembered. */
const MAX_PACED = 10_000;

/**
 * Holds an operation's first poll until the Retry-After its write's answer
 * gave (the SDK polls at once after the write, then at the Retry-After of
 * each poll's answer): every poll then goes when the operation asked.
 */
export function operationPacingPolicy(clock: Pick<Clock, 'now' | 'sleep'>): PipelinePolicy {
  const notBefore = new Map<string, number>();
  return {
    name: 'armOperationPacingPolicy',
    async sendRequest(request, next) {
      if (request.method === 'GET') {
        const at = notBefore.get(request.url);
        if (at !== undefined) {
          notBefore.delete(request.url);
          const wait = at - clock.now();
          if (wait > 0)
            await sleepOrAbort(clock, wait, request.abortSignal as AbortSignal | undefined);
        }
      }
      const response = await next(request);
      const poll = response.headers.get('azure-asyncoperation');
      if (request.method !== 'GET' && poll) {
        const after = retryAfterMs(response.headers, systemClock.now());
        if (after !== undefined && after > 0) {
          if (notBefore.size >= MAX_PACED) notBefore.clear();
          notBefore.set(poll, clock.now() + after);
        }
      }
      return response;
    },
  };
}

export function bearerPolicy(source: BearerTokenSource): PipelinePolicy {
  return {
    name: 'armBearerPolicy',
    async sendRequest(request, next) {
      const signal = request.abortSignal as AbortSignal | undefined;
      const token = await source.token(signal);
      request.headers.set('authorization', `Bearer ${token}`);
      const response = await next(request);
      if (response.status !== 401) return response;
      source.invalidate();
      const fresh = await source.token(signal);
      if (fresh === token) return response;
      request.headers.set('authorization', `Bearer ${fresh}`);
      return next(request);
    },
  };
}

export function metricsPolicy(metrics: ArmMetricsSink, now: () => number): PipelinePolicy {
  return {
    name: 'armMetricsPolicy',
    async sendRequest(request, next) {
      const operation = armOperationOf(request.method, request.url);
      const start = now();
      try {
        const response = await next(request);
        metrics.call(operation, String(response.status), (now() - start) / 1000);
        if (response.status === 403) metrics.forbidden(operation);
        return response;
      } catch (err) {
        metrics.call(operation, 'error', (now() - start) / 1000);
        throw err;
      }
    },
  };
}
