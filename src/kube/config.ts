// Where the Kubernetes connection comes from, in the order the commands
// document: the --kubeconfig flag, then the KUBECONFIG environment variable,
// then the in-cluster service account. Each failure names the source that was
// tried, so a misconfigured agent says exactly why it cannot start.
import { KubeConfig } from './client-node.ts';
import { existsSync } from 'node:fs';
import { shareDispatchers, type SharedDispatchers } from './shared-dispatcher.ts';

export interface LoadKubeConfigOptions {
  /** Path from the --kubeconfig flag; wins over everything else. */
  kubeconfig?: string;
  /** Environment to read KUBECONFIG and the in-cluster variables from. */
  env?: NodeJS.ProcessEnv;
  /** Service-account token path, for the in-cluster check (tests override it). */
  serviceAccountTokenPath?: string;
  /** Watch connections: in a shared keep-alive pool (default) or one dispatcher each. */
  watchConnections?: 'pooled' | 'own';
  /** Most request connections to the server, watches aside (default 4; Infinity: no limit). */
  maxConnections?: number;
}

/** Request connections a product process opens to its API server at most (watches aside). */
export const MAX_API_CONNECTIONS = 4;

export const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Which source a loaded configuration came from, for the start-up log. */
export type KubeConfigSource = 'flag' | 'env' | 'in-cluster';

export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

function loadFile(path: string, what: string): KubeConfig {
  if (!existsSync(path)) throw new KubeConfigError(`${what} ${path}: file not found`);
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(path);
  } catch (err) {
    throw new KubeConfigError(
      `${what} ${path}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
  if (!kc.getCurrentCluster()) {
    throw new KubeConfigError(`${what} ${path}: no current context with a cluster`);
  }
  return kc;
}

export interface LoadedKubeConfig {
  kc: KubeConfig;
  source: KubeConfigSource;
  /** The keep-alive connection pool every request of `kc` goes through; destroy() on shutdown. */
  connections: SharedDispatchers;
}

/**
 * Loads the configuration with its requests on one keep-alive connection
 * pool (shared-dispatcher.ts); throws KubeConfigError when no source works.
 */
export function loadKubeConfig(options: LoadKubeConfigOptions = {}): LoadedKubeConfig {
  const { kc, source } = loadFrom(options);
  const max = options.maxConnections ?? MAX_API_CONNECTIONS;
  const connections = shareDispatchers(kc, {
    watches: options.watchConnections ?? 'pooled',
    ...(Number.isFinite(max) ? { maxConnections: max } : {}),
  });
  return { kc, source, connections };
}

function loadFrom(options: LoadKubeConfigOptions): { kc: KubeConfig; source: KubeConfigSource } {
  const env = options.env ?? process.env;
  if (options.kubeconfig)
    return { kc: loadFile(options.kubeconfig, '--kubeconfig'), source: 'flag' };
  const fromEnv = env.KUBECONFIG?.split(':').find((p) => p.length > 0);
  if (fromEnv) return { kc: loadFile(fromEnv, 'KUBECONFIG'), source: 'env' };
  const host = env.KUBERNETES_SERVICE_HOST;
  const tokenPath = options.serviceAccountTokenPath ?? SERVICE_ACCOUNT_TOKEN;
  if (host && existsSync(tokenPath)) {
    const kc = new KubeConfig();
    kc.loadFromCluster();
    return { kc, source: 'in-cluster' };
  }
  throw new KubeConfigError(
    'no Kubernetes configuration: pass --kubeconfig FILE, set KUBECONFIG, or run in a cluster',
  );
}
