// The node agent, wired: informers → PoolMonitor → SQLite IP store + NNC
// server-side apply, the node API on --listen, metrics and Events. The same
// function runs one sidecar process (`bin/pool-monitor sidecar`) and many
// sidecars inside the embedded cluster, so it keeps no process-global state,
// never exits the process, and reports the port it actually bound.
//
// Start is four named steps, configuration first (nothing is opened when it
// is bad): open the store, build the sidecar in the order its data flows
// (sidecar.ts), serve the node API, start and wire the watches
// (wire-watches.ts). Each step pushes how to undo
// itself onto one stop list (stop-steps.ts), run last-in-first-out, each
// step named in the log and bounded in time: informers first (no new input),
// then the monitor (its in-flight reconcile finishes), the node API
// (in-flight CNI calls finish), pending Events, and the store last. A start
// that fails half way runs the same list.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../clock/clock.ts';
import type { Synchronous } from '../ipstore/database.ts';
import { openIpStore } from '../ipstore/sqlite-store.ts';
import type { PodFollower } from '../ipstore/follow-pods.ts';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { loadKubeConfig } from '../kube/config.ts';
import { errorText } from '../log/error-text.ts';
import type { Logger } from '../log/logger.ts';
import { createLogger } from '../log/logger.ts';
import type { MetricsCollector } from '../metrics/collector.ts';
import type { PoolMonitor } from '../monitor/pool-monitor.ts';
import { formatReleaseDelay } from '../scaling/release-delay-value.ts';
import { poolStatusSource } from '../nodeapi/debug-pool.ts';
import { createNodeApi } from '../nodeapi/server.ts';
import type { NodeInformers } from './informers.ts';
import type { LeakReporter } from './leaks.ts';
import type { SidecarOptions } from './options.ts';
import { ConfigError, DEFAULT_LEAK_GRACE_SECONDS } from './options.ts';
import { startMetricsListener } from './metrics-listen.ts';
import { startHealthListener, type HealthSource } from './health-listen.ts';
import { StopSteps } from './stop-steps.ts';
import { TokenFile } from '../secrets/token-file.ts';
import { wireWatches } from './wire-watches.ts';
import type { ScheduleSignalLoop } from './schedule-signal-run.ts';
import type { SignalTuning } from './schedule-signal-wire.ts';
import { buildSidecar, type Sidecar } from './sidecar.ts';

export interface RunSidecarDeps extends SignalTuning {
  /** Stops the sidecar when aborted. */
  signal?: AbortSignal;
  /** Root logger; a JSON-lines stdout logger at options.logLevel when absent. */
  logger?: Logger;
  /** An already loaded configuration (embedded mode); else loaded from options/env. */
  kc?: KubeConfig;
  env?: NodeJS.ProcessEnv;
  /** Node's default process metrics in this sidecar's registry (default true). */
  defaultMetrics?: boolean;
  /** Record Kubernetes Events (default true). */
  events?: boolean;
  /** Monitor tuning; defaults are the product's (60 s tick, 500 ms write window). */
  tickMs?: number;
  writeWindowMs?: number;
  writeBackoff?: Partial<BackoffOptions>;
  /** Informer restart backoff. */
  watchBackoff?: BackoffOptions;
  /** How long stop() may take before it stops waiting (default 8 s). */
  shutdownTimeoutMs?: number;
  /** Grace for in-flight node API requests on stop (default 3 s). */
  apiCloseGraceMs?: number;
  /** How often an unchanged reason for waiting is said again (default 60 s). */
  waitNoticeMs?: number;
  /**
   * The wall clock and timers of the wait notices and of the pool history's
   * read at start (default: the system's; the monitor keeps its scheduler).
   */
  clock?: Clock;
  random?: () => number;
  /**
   * An IP store to use instead of opening `<stateDir>/ipstore.db` (e.g. an
   * in-memory one in tests). The sidecar owns it: stop() closes it.
   */
  store?: NodeIpStore;
  /**
   * SQLite synchronous level of the store opened from stateDir. The product
   * keeps FULL (docs/decisions/0003, 0005); the embedded cluster, whose state
   * dies with the process, uses NORMAL.
   */
  storeSynchronous?: Synchronous;
}

export interface RunningSidecar {
  /** Where the node API listens (the bound port when --listen asked for 0). */
  host: string;
  /** The node API's unix socket (--listen unix:PATH); host and port are then empty. */
  socket?: string;
  port: number;
  url: string;
  monitor: PoolMonitor;
  store: NodeIpStore;
  informers: NodeInformers;
  metrics: MetricsCollector;
  /** The store following the pods: adoption, leak suspects and reclaims. */
  pods: PodFollower;
  /** What was reclaimed, adopted and found conflicting so far. */
  leaks: LeakReporter;
  /** The schedule signal (--schedule-signal, on by default): its taint on the Node. */
  scheduleSignal: ScheduleSignalLoop | undefined;
  /** Resolves once stop() (or the abort signal) has shut everything down. */
  readonly stopped: Promise<void>;
  /** Clean shutdown; idempotent. */
  stop(): Promise<void>;
}

/** What the sidecar runs with once its configuration is read. */
interface SidecarConfig {
  kc: KubeConfig;
  /** The kubeconfig loaded here (not given): its connection pool is the sidecar's. */
  loaded: ReturnType<typeof loadKubeConfig> | undefined;
  tokenFile: TokenFile | undefined;
}

export async function runSidecar(
  options: SidecarOptions,
  deps: RunSidecarDeps = {},
): Promise<RunningSidecar> {
  // Every line of this sidecar says which node it is about (many sidecars
  // share one log in the embedded cluster).
  const root = (deps.logger ?? createLogger({ level: options.logLevel })).child({
    node: options.nodeName,
  });
  const log = root.child({ component: 'sidecar' });
  if (deps.signal?.aborted) throw new ConfigError('aborted before start');
  const config = readConfig(options, deps);
  const stops = new StopSteps();
  const boundMs = (deps.shutdownTimeoutMs ?? 8000) / 4;
  const store = openStore(options, deps, stops);
  if (config.loaded) {
    // After the Events still in flight (pushed later, so run earlier).
    const { connections } = config.loaded;
    stops.push('connections', () => connections.destroy());
  }
  const sidecar = buildSidecar({ options, tuning: deps, root, log, kc: config.kc, store }, stops);
  let bound: Bound;
  let metricsUrl: string | undefined;
  let healthUrl: string | undefined;
  try {
    bound = await serveNodeApi(sidecar, deps, config, stops);
    metricsUrl = await serveMetrics(options, sidecar.metrics, stops);
    healthUrl = await serveHealth(options, sidecar, stops);
  } catch (err) {
    await stops.run(log, boundMs);
    throw err;
  }
  const informers = wireWatches(sidecar, deps, stops);
  sidecar.signal.start();
  log.info('sidecar started', {
    namespace: options.namespace,
    listen: bound.socket !== undefined ? `unix:${bound.socket}` : `${bound.host}:${bound.port}`,
    nodeApiToken: config.tokenFile !== undefined,
    ...(metricsUrl !== undefined ? { metrics: metricsUrl } : {}),
    ...(healthUrl !== undefined ? { health: healthUrl } : {}),
    stateDir: options.stateDir,
    subnetState: options.subnetState,
    releaseDelay: formatReleaseDelay(options.releaseDelay),
    ...(options.releaseDelay.kind === 'auto' ? { idleBudget: options.idleBudget } : {}),
    historyLoaded: sidecar.pool.learned,
    leakGraceSeconds: options.leakGraceSeconds ?? DEFAULT_LEAK_GRACE_SECONDS,
    dryRun: options.dryRun,
    scheduleSignal: options.scheduleSignal !== false,
  });

  let resolveStopped: () => void = () => {};
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      log.info('sidecar stopping');
      await stops.run(log, boundMs);
      log.info('sidecar stopped');
      resolveStopped();
    })();
    return stopping;
  };
  deps.signal?.addEventListener('abort', () => void stop(), { once: true });

  return {
    host: bound.host,
    port: bound.port,
    ...(bound.socket !== undefined ? { socket: bound.socket } : {}),
    url: `http://${bound.host.includes(':') ? `[${bound.host}]` : bound.host}:${bound.port}`,
    monitor: sidecar.pool.monitor,
    store,
    informers,
    metrics: sidecar.metrics,
    pods: sidecar.followers.pods,
    leaks: sidecar.followers.leaks,
    scheduleSignal: sidecar.signal.loop,
    stopped,
    stop,
  };
}

/** What /healthz and /readyz say, on the node API and on --health-listen alike. */
function healthOf(sidecar: Sidecar): HealthSource {
  return {
    healthy: () => !sidecar.readiness().stopping && sidecar.followers.nnc.healthy(),
    ready: () => sidecar.whyNotReady() === undefined,
    notReadyReason: () => sidecar.whyNotReady()?.reason,
  };
}

/** Step 3c: /healthz and /readyz alone on --health-listen, when given; a port in use fails the start. */
async function serveHealth(
  options: SidecarOptions,
  sidecar: Sidecar,
  stops: StopSteps,
): Promise<string | undefined> {
  const at = options.healthListen;
  if (!at) return undefined;
  try {
    const listener = await startHealthListener(at.host, at.port, healthOf(sidecar));
    stops.push('health listener', () => listener.close());
    return listener.url;
  } catch (err) {
    throw new ConfigError(`--health-listen ${at.host}:${at.port}: ${errorText(err)}`);
  }
}

/** Step 3b: /metrics alone on --metrics-listen, when given; a port in use fails the start. */
async function serveMetrics(
  options: SidecarOptions,
  metrics: MetricsCollector,
  stops: StopSteps,
): Promise<string | undefined> {
  const at = options.metricsListen;
  if (!at) return undefined;
  try {
    const listener = await startMetricsListener(at.host, at.port, metrics);
    stops.push('metrics listener', () => listener.close());
    return listener.url;
  } catch (err) {
    throw new ConfigError(`--metrics-listen ${at.host}:${at.port}: ${errorText(err)}`);
  }
}

/** Configuration first: nothing is opened when it is bad. */
function readConfig(options: SidecarOptions, deps: RunSidecarDeps): SidecarConfig {
  // A kubeconfig loaded here is the sidecar's own, with its connection pool (closed on stop).
  const loaded = deps.kc
    ? undefined
    : loadKubeConfig({
        ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}),
        env: deps.env ?? process.env,
      });
  const kc = deps.kc ?? (loaded as NonNullable<typeof loaded>).kc;
  let tokenFile: TokenFile | undefined;
  if (options.nodeApiTokenFile !== undefined) {
    try {
      tokenFile = new TokenFile(options.nodeApiTokenFile);
    } catch (err) {
      throw new ConfigError(`--node-api-token-file: ${errorText(err)}`);
    }
  }
  return { kc, loaded, tokenFile };
}

/** Step 1: the node IP store (given, or `<stateDir>/ipstore.db`); closed last. */
function openStore(options: SidecarOptions, deps: RunSidecarDeps, stops: StopSteps): NodeIpStore {
  let store: NodeIpStore;
  try {
    store =
      deps.store ??
      openIpStore({
        stateDir: options.stateDir,
        ...(deps.storeSynchronous ? { synchronous: deps.storeSynchronous } : {}),
      });
  } catch (err) {
    throw new ConfigError(`--state-dir: ${errorText(err)}`);
  }
  stops.push('store close', () => store.close());
  return store;
}

interface Bound {
  host: string;
  port: number;
  socket?: string;
}

/**
 * Step 3: the node API binds before anything talks to the API server: a port
 * in use or a bad address fails the start here, before any watch.
 */
async function serveNodeApi(
  sidecar: Sidecar,
  deps: RunSidecarDeps,
  config: SidecarConfig,
  stops: StopSteps,
): Promise<Bound> {
  const { options, root, store, signal, podWaits, metrics } = sidecar;
  const { monitor, advisor } = sidecar.pool;
  const { pods, leaks } = sidecar.followers;
  const tokenFile = config.tokenFile;
  const poolSource = poolStatusSource(
    () => ({ ...monitor.snapshot(), damping: monitor.damping(), advice: advisor?.current() }),
    store,
    () => sidecar.families(),
  );
  const api = createNodeApi({
    store,
    health: healthOf(sidecar),
    pool: {
      debugPool: () => ({
        ...poolSource.debugPool(),
        leaks: {
          ...pods.status(),
          reclaimed: { ...leaks.counts.reclaimed },
          adopted: leaks.counts.adopted,
          conflicts: leaks.counts.conflicts,
        },
        scheduleSignal: signal.status(),
      }),
    },
    assignGate: () => pods.notReady() ?? sidecar.intake.goneReason(),
    onUnmatchedRelease: (request) => pods.releaseAdopted(request.podNamespace, request.podName),
    onChange: (change) => {
      signal.poke();
      if (change.kind === 'replaced') leaks.reclaimed(change.record, 'sandbox-recreated');
      else if (change.kind === 'assigned') {
        pods.storeChanged();
        const pod = change.record.pod;
        if (pod) podWaits.assigned(pod.podNamespace, pod.podName);
      }
    },
    onNoIp: () => podWaits.refused(),
    metrics,
    logger: root,
    closeGraceMs: deps.apiCloseGraceMs ?? 3000,
    ...(tokenFile ? { token: () => tokenFile.current() } : {}),
  });
  const socket = options.listenSocket;
  try {
    const bound: Bound =
      socket !== undefined
        ? await api
            .listenUnix(socket, {
              ...(options.listenGroup !== undefined ? { gid: options.listenGroup } : {}),
            })
            .then(() => ({ host: '', port: 0, socket }))
        : await api.listen(options.listenHost, options.listenPort);
    stops.push('node api', () => api.close());
    return bound;
  } catch (err) {
    const where =
      socket !== undefined ? `unix:${socket}` : `${options.listenHost}:${options.listenPort}`;
    throw new ConfigError(`--listen ${where}: ${errorText(err)}`);
  }
}
