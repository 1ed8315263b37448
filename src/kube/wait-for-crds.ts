// Waiting for custom resources to be served, before anything watches or
// writes them: with the CRDs not installed (or deleted), a watch would fail
// with 404 at every restart. This asks discovery (GET /apis/GROUP/VERSION,
// open to every authenticated user through system:discovery) until every
// resource named is listed, says so once at warn when it has to wait (with
// what to apply), retries with backoff (quietly, at debug), and says once at
// info when they are there. Other failures (the API server down, a 403) wait
// the same way, each new kind of failure logged once.
import type { Logger } from '../log/logger.ts';
import { Backoff } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { apiErrorInfo } from './errors.ts';

/** One discovery read: the resource names served at GROUP/VERSION (throws 404 when none). */
export type DiscoverResources = (version: string) => Promise<string[]>;

/** A resource by its version and plural name. */
export interface CrdResource {
  version: string;
  plural: string;
}

export interface WaitForCrdsOptions {
  group: string;
  /** e.g. {version: 'v1alpha', plural: 'nodenetworkconfigs'}. */
  resources: readonly CrdResource[];
  discover: DiscoverResources;
  logger: Logger;
  /** Retry delays: 1 s doubling to a minute by default. */
  backoff?: BackoffOptions;
  /** Told why it waits while it does, then undefined (for /readyz). */
  onWaiting?: (reason: string | undefined) => void;
  /** Ends the wait (resolves false). */
  signal?: AbortSignal;
  /** What to apply, named in the message. */
  install?: string;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export const CRD_WAIT_BACKOFF: BackoffOptions = {
  initialMs: 1000,
  maxMs: 60_000,
  factor: 2,
  jitter: 0.2,
};

const sleepFor = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** Resolves true once every resource is served, false if `signal` ends the wait first. */
export async function waitForCrds(o: WaitForCrdsOptions): Promise<boolean> {
  const backoff = new Backoff(o.backoff ?? CRD_WAIT_BACKOFF);
  const sleep = o.sleep ?? sleepFor;
  const crd = (r: CrdResource): string => `${r.plural}.${o.group}`;
  const versions = [...new Set(o.resources.map((r) => r.version))];
  const install = o.install ?? 'kubectl apply -k manifests/crds/';
  let said: string | undefined;
  let waited = false;
  for (;;) {
    if (o.signal?.aborted) return false;
    let reason: string;
    try {
      const served = new Set<string>();
      const found = await Promise.all(
        versions.map((v) =>
          o.discover(v).then(
            (names) => names.map((n) => `${v}/${n}`),
            (err: unknown) => {
              if (apiErrorInfo(err).statusCode === 404) return []; // the group version is not served
              throw err;
            },
          ),
        ),
      );
      for (const n of found.flat()) served.add(n);
      const missing = o.resources.filter((r) => !served.has(`${r.version}/${r.plural}`));
      if (missing.length === 0) break;
      reason = `CRDs not installed: ${missing.map(crd).join(', ')} (${install})`;
    } catch (err) {
      reason = `cannot tell whether the CRDs are installed: ${apiErrorInfo(err).message}`;
    }
    waited = true;
    o.onWaiting?.(reason);
    const delayMs = backoff.next();
    if (reason !== said) {
      o.logger.warn(`${reason}; waiting for them`, { retryInMs: delayMs });
      said = reason;
    } else o.logger.debug('still waiting for the CRDs', { reason, retryInMs: delayMs });
    await sleep(delayMs, o.signal);
  }
  o.onWaiting?.(undefined);
  if (waited) o.logger.info('CRDs installed', { crds: o.resources.map(crd) });
  return true;
}
