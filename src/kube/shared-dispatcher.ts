// Makes a KubeConfig reuse one keep-alive Agent per distinct set of
// dispatcher options, instead of client-node's new connection per request
// (docs/decisions/0006). Every process uses it through loadKubeConfig.
// Requests share a pool of at most maxConnections connections (the product:
// 4); watches stay out of it: by default ('pooled') they share a second,
// uncapped pool; the embedded cluster gives each watch a dispatcher of its
// own ('own'). KubeConfigs of other users can join the same pools
// (attach). It relies on KubeConfig's (TypeScript-private)
// createDispatcher method: shareDispatchers throws at start if a client-node
// upgrade removed it, and test/kube/shared-dispatcher.test.ts pins it.
import type { KubeConfig, RequestContext } from '@kubernetes/client-node';
import type { Dispatcher } from 'undici';
import { Agent } from './lean/undici.ts';

interface Closable {
  destroy(): Promise<void>;
}

type CreateDispatcher = (cluster: unknown, agentOptions: unknown) => Closable | undefined;

interface DispatcherHooks {
  createDispatcher: CreateDispatcher;
  createDispatcherOptions(
    cluster: unknown,
    agentOptions: unknown,
  ): { type: string; connect?: object };
  applySecurityAuthentication(context: RequestContext): Promise<void>;
}

export interface ShareOptions {
  /** 'pooled' (default): watches share a pool of their own; 'own': a dispatcher per watch. */
  watches?: 'pooled' | 'own';
  /** Most connections the request pool opens to one server (default: no limit); watches aside. */
  maxConnections?: number;
}

export interface SharedDispatchers {
  /** Shared request dispatchers created so far (one per distinct option set). */
  count(): number;
  /**
   * Lets another KubeConfig of the same server (another user's token) use
   * these pools too: a thousand sidecars, each with its own token, share
   * the embedded cluster's connections.
   */
  attach(kc: KubeConfig): void;
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

type SetDispatcher = Parameters<RequestContext['setDispatcher']>[0];

/**
 * undici closes a connection after a DELETE that carries a body (RFC 7231
 * gives DELETE no body semantics), and every NNC delete sends its uid
 * precondition as one: each would cost the pool a new TLS connection. The
 * API server reads DeleteOptions from a DELETE's body, so the connection
 * stays in the pool (`reset: false`).
 */
const keepAliveAfterDelete: Dispatcher.DispatcherComposeInterceptor =
  (dispatch) => (options, handler) =>
    dispatch(
      options.method === 'DELETE' && options.reset === undefined
        ? { ...options, reset: false }
        : options,
      handler,
    );

/** Makes `kc` reuse one keep-alive dispatcher per distinct option set. */
export function shareDispatchers(kc: KubeConfig, opts: ShareOptions = {}): SharedDispatchers {
  /** Request pools and pooled-watch dispatchers, by option set. */
  const requests = new Map<string, Closable | undefined>();
  const watches = new Map<string, Closable | undefined>();
  /** How to make an uncapped dispatcher like a shared request one (for watches). */
  const recipes = new Map<Closable, { key: string; make: () => Closable | undefined }>();
  /** Puts back what attach() replaced, per KubeConfig. */
  const restores: (() => void)[] = [];

  const attach = (kc: KubeConfig): void => {
    const hooks = kc as unknown as DispatcherHooks;
    if (
      typeof hooks.createDispatcher !== 'function' ||
      typeof hooks.createDispatcherOptions !== 'function'
    )
      throw new Error(
        '@kubernetes/client-node no longer has KubeConfig.createDispatcher: src/kube/shared-dispatcher.ts needs updating',
      );
    const original = hooks.createDispatcher.bind(kc);
    const originalApply = hooks.applySecurityAuthentication.bind(kc);
    /** Client-node's own dispatcher, or a capped keep-alive Agent like it. */
    const make = (
      cluster: unknown,
      agentOptions: unknown,
      capped: boolean,
    ): Closable | undefined => {
      const o = hooks.createDispatcherOptions(cluster, agentOptions);
      if (!capped || opts.maxConnections === undefined || o.type !== 'agent')
        return original(cluster, agentOptions);
      return new Agent({ connect: o.connect ?? {}, connections: opts.maxConnections }).compose(
        keepAliveAfterDelete,
      );
    };
    // The option set holds the server and its TLS settings, not the user's
    // token (a header): KubeConfigs of different users share the pool.
    hooks.createDispatcher = (cluster, agentOptions) => {
      const key = JSON.stringify(hooks.createDispatcherOptions(cluster, agentOptions));
      if (requests.has(key)) return requests.get(key);
      const d = make(cluster, agentOptions, true);
      requests.set(key, d);
      if (d) recipes.set(d, { key, make: () => make(cluster, agentOptions, false) });
      return d;
    };
    hooks.applySecurityAuthentication = async (context) => {
      await originalApply(context);
      const shared = context.getDispatcher() as Closable | undefined;
      const recipe = shared && recipes.get(shared);
      if (!recipe || !isWatchUrl(context.getUrl())) return;
      let d: Closable | undefined;
      if (opts.watches === 'own') d = recipe.make();
      else {
        if (!watches.has(recipe.key)) watches.set(recipe.key, recipe.make());
        d = watches.get(recipe.key);
      }
      if (d) context.setDispatcher(d as unknown as SetDispatcher);
    };
    restores.push(() => {
      hooks.createDispatcher = original;
      hooks.applySecurityAuthentication = originalApply;
    });
  };

  attach(kc);
  return {
    count: () => [...requests.values()].filter((d) => d !== undefined).length,
    attach,
    async destroy() {
      for (const restore of restores.splice(0)) restore();
      const all = [...requests.values(), ...watches.values()];
      requests.clear();
      watches.clear();
      recipes.clear();
      await Promise.all(all.map((d) => d?.destroy().catch(() => undefined)));
    },
  };
}
