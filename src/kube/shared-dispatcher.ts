// client-node 2.0.1 builds a new undici Agent for every request whose
// cluster has TLS options (including `insecure-skip-tls-verify`, which the
// local API server's kubeconfig needs): each request opens a fresh
// connection, and each idle Agent keeps its socket until its keep-alive
// timeout. With a thousand in-process clients that is thousands of sockets
// and connects. This makes a KubeConfig hand out one keep-alive Agent per
// distinct set of dispatcher options for ordinary requests, so they share a
// pool. Watches keep a dispatcher of their own, as client-node gives them:
// a watch holds its connection for minutes, and undici's pool scans all its
// connections on every request and every disconnect, so thousands of watch
// streams in the shared pool would make each request cost O(watches).
// Used by the embedded cluster; the product commands keep client-node's
// default behaviour.
import type { KubeConfig, RequestContext } from '@kubernetes/client-node';

interface Closable {
  destroy(): Promise<void>;
}

type CreateDispatcher = (cluster: unknown, agentOptions: unknown) => Closable | undefined;

interface DispatcherHooks {
  createDispatcher: CreateDispatcher;
  createDispatcherOptions(cluster: unknown, agentOptions: unknown): unknown;
  applySecurityAuthentication(context: RequestContext): Promise<void>;
}

export interface SharedDispatchers {
  /** Shared dispatchers created so far (one per distinct option set). */
  count(): number;
  /** Destroys every shared dispatcher (open requests are cut); call after the clients stopped. */
  destroy(): Promise<void>;
}

/** True for a watch request URL (`?watch=true` or `watch=1`). */
export function isWatchUrl(url: string): boolean {
  const q = url.indexOf('?');
  if (q < 0) return false;
  const watch = new URLSearchParams(url.slice(q + 1)).get('watch');
  return watch === 'true' || watch === '1';
}

/** Makes `kc` reuse one dispatcher per distinct option set for non-watch requests. */
export function shareDispatchers(kc: KubeConfig): SharedDispatchers {
  const hooks = kc as unknown as DispatcherHooks;
  const original = hooks.createDispatcher.bind(kc);
  const originalApply = hooks.applySecurityAuthentication.bind(kc);
  const cache = new Map<string, Closable | undefined>();
  /** How to make another dispatcher like a shared one (for watches). */
  const recipes = new Map<Closable, () => Closable | undefined>();
  hooks.createDispatcher = (cluster, agentOptions) => {
    const key = JSON.stringify(hooks.createDispatcherOptions(cluster, agentOptions));
    if (cache.has(key)) return cache.get(key);
    const d = original(cluster, agentOptions);
    cache.set(key, d);
    if (d) recipes.set(d, () => original(cluster, agentOptions));
    return d;
  };
  hooks.applySecurityAuthentication = async (context) => {
    await originalApply(context);
    const shared = context.getDispatcher() as Closable | undefined;
    const another = shared && recipes.get(shared);
    if (another && isWatchUrl(context.getUrl())) {
      const own = another();
      if (own)
        context.setDispatcher(own as unknown as Parameters<RequestContext['setDispatcher']>[0]);
    }
  };
  return {
    count: () => [...cache.values()].filter((d) => d !== undefined).length,
    async destroy() {
      hooks.createDispatcher = original;
      hooks.applySecurityAuthentication = originalApply;
      const all = [...cache.values()];
      cache.clear();
      recipes.clear();
      await Promise.all(all.map((d) => d?.destroy().catch(() => undefined)));
    },
  };
}
