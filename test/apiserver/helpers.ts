// Shared helpers for the API server tests: a started server with the CRDs,
// JSON requests, and a line reader for watch streams.
import {
  startApiServer,
  type ApiServer,
  type ApiServerOptions,
} from '../../harness/apiserver/server.ts';
import { GROUP, NNC_KIND, NNC_VERSION } from '../../src/nnc/types.ts';
import { CRDS_DIR } from '../support/wait.ts';

export { CRDS_DIR };

// The URL path as a client sends it on the wire: spelled out, not built from src/nnc.
export const NNC_PATH = '/apis/acn.azure.com/v1alpha/namespaces/kube-system/nodenetworkconfigs';

export function withCrds(opts: ApiServerOptions = {}): Promise<ApiServer> {
  return startApiServer({ crdsDir: CRDS_DIR, ...opts });
}

export interface Reply {
  status: number;
  body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Headers;
}

export async function call(
  server: ApiServer,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
  headers: Record<string, string> = {},
): Promise<Reply> {
  const init: RequestInit = { method, headers: { 'Content-Type': contentType, ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(server.url + path, init);
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { text };
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

export function nnc(
  name: string,
  requested = 16,
  labels: Record<string, string> = {},
): Record<string, unknown> {
  return {
    apiVersion: `${GROUP}/${NNC_VERSION}`,
    kind: NNC_KIND,
    metadata: { name, namespace: 'kube-system', labels },
    spec: { requestedIPCount: requested },
  };
}

export interface WatchEvent {
  type: string;
  object: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Opens a watch and collects its events; `next(n)` waits for n more. */
export async function openWatch(
  server: ApiServer,
  path: string,
): Promise<{
  events: WatchEvent[];
  waitFor(n: number, timeoutMs?: number): Promise<WatchEvent[]>;
  ended: Promise<void>;
  close(): void;
}> {
  const ctl = new AbortController();
  const res = await fetch(server.url + path, { signal: ctl.signal });
  if (!res.body) throw new Error('no body');
  const events: WatchEvent[] = [];
  const waiters: (() => void)[] = [];
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const ended = (async () => {
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line.trim()) events.push(JSON.parse(line) as WatchEvent);
        }
        for (const w of waiters.splice(0)) w();
      }
    } catch {
      // aborted
    }
    for (const w of waiters.splice(0)) w();
  })();
  let finished = false;
  void ended.then(() => (finished = true));
  return {
    events,
    ended,
    close: () => ctl.abort(),
    async waitFor(n, timeoutMs = 3000) {
      const deadline = Date.now() + timeoutMs;
      while (events.length < n) {
        if (finished) break;
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${n} events, have ${events.length}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
      return events;
    },
  };
}
