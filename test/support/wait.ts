// Polling helpers shared by the tests that run against a live API server.
import { fileURLToPath } from 'node:url';

/** The project's CRDs, for startApiServer({ crdsDir }). */
export const CRDS_DIR = fileURLToPath(new URL('../../manifests/crds/', import.meta.url));

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `probe` until it returns something other than undefined or false and
 * returns that; a probe that throws counts as not yet, and its last error is
 * named when the time runs out.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 8000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await sleep(10);
  }
}
