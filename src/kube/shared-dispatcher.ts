// client-node 2.0.1 builds a new undici Agent for every request whose
// cluster has TLS options (including `insecure-skip-tls-verify`, which the
// local API server's kubeconfig needs): each request opens a fresh
// connection, and each idle Agent keeps its socket until its keep-alive
// timeout. With a thousand in-process clients that is thousands of sockets
// and connects. This makes a KubeConfig hand out one keep-alive Agent per
// distinct set of dispatcher options instead, so requests share a pool.
// Used by the embedded cluster; the product commands keep client-node's
// default behaviour.
import type { KubeConfig } from '@kubernetes/client-node';

interface Closable {
  destroy(): Promise<void>;
}

type CreateDispatcher = (cluster: unknown, agentOptions: unknown) => Closable | undefined;

interface DispatcherHooks {
  createDispatcher: CreateDispatcher;
  createDispatcherOptions(cluster: unknown, agentOptions: unknown): unknown;
}

export interface SharedDispatchers {
  /** Dispatchers created so far (one per distinct option set). */
  count(): number;
  /** Destroys every shared dispatcher (open streams are cut); call after the clients stopped. */
  destroy(): Promise<void>;
}

/** Makes `kc` reuse one dispatcher per distinct option set; returns a handle to destroy them. */
export function shareDispatchers(kc: KubeConfig): SharedDispatchers {
  const hooks = kc as unknown as DispatcherHooks;
  const original = hooks.createDispatcher.bind(kc);
  const cache = new Map<string, Closable | undefined>();
  hooks.createDispatcher = (cluster, agentOptions) => {
    const key = JSON.stringify(hooks.createDispatcherOptions(cluster, agentOptions));
    if (cache.has(key)) return cache.get(key);
    const d = original(cluster, agentOptions);
    cache.set(key, d);
    return d;
  };
  return {
    count: () => [...cache.values()].filter((d) => d !== undefined).length,
    async destroy() {
      hooks.createDispatcher = original;
      const all = [...cache.values()];
      cache.clear();
      await Promise.all(all.map((d) => d?.destroy().catch(() => undefined)));
    },
  };
}
