// The node agent, wired: informers → PoolMonitor → SQLite IP store + NNC
// server-side apply, the node API on --listen, metrics and Events. The same
// function runs one sidecar process (`bin/pool-monitor sidecar`) and many
// sidecars inside the embedded cluster, so it keeps no process-global state,
// never exits the process, and reports the port it actually bound.
//
// Shutdown order matters: informers first (no new input), then the monitor
// (its in-flight reconcile finishes), then the node API (in-flight CNI calls
// finish), pending Events, and the store last, everything bounded in time.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Subscription } from 'rxjs';
import { filter, share, Subject, tap } from 'rxjs';
import type { Synchronous } from '../ipstore/database.ts';
import { openIpStore } from '../ipstore/sqlite-store.ts';
import { followNnc } from '../ipstore/follow-nnc.ts';
import { followPods, type PodFollower } from '../ipstore/follow-pods.ts';
import type { PodView } from '../ipstore/pod-plan.ts';
import { asPoolIpStore } from '../ipstore/pool-adapter.ts';
import type { NodeIpStore } from '../ipstore/types.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import { loadKubeConfig } from '../kube/config.ts';
import { sidecarEventPrefix } from '../kube/event-names.ts';
import { createEventRecorder, noopEventRecorder } from '../kube/events.ts';
import type { EventDetails, EventRecorder, InvolvedObject } from '../kube/events.ts';
import type { Logger } from '../log/logger.ts';
import { createLogger } from '../log/logger.ts';
import { MetricsCollector } from '../metrics/collector.ts';
import { LeakMetrics } from '../metrics/leaks.ts';
import { poolObservation } from '../metrics/observation.ts';
import { PoolMonitor } from '../monitor/pool-monitor.ts';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import type { Observation } from '../scaling/policies/policy.ts';
import { formatReleaseDelay } from '../cli/release-delay.ts';
import { releasePolicy } from '../scaling/policies/release-delay.ts';
import { dynamicContainers, GROUP, NNC_KIND, NNC_VERSION } from '../nnc/types.ts';
import { poolStatusSource } from '../nodeapi/debug-pool.ts';
import { createNodeApi } from '../nodeapi/server.ts';
import type { NodeApi } from '../nodeapi/server.ts';
import { monitorEvent, outcomeEvent, vanishedEvent } from './events.ts';
import { startNodeInformers } from './informers.ts';
import { LeakReporter } from './leaks.ts';
import { createAdvisor } from './advice.ts';
import { recordPoolHistory } from './history-recorder.ts';
import { createNncWriter } from './nnc-writer.ts';
import { PodWaitTracker, type PodLike } from './pod-wait.ts';
import type { NodeInformers } from './informers.ts';
import type { SidecarOptions } from './options.ts';
import { ConfigError, DEFAULT_LEAK_GRACE_SECONDS } from './options.ts';
import { TokenFile } from '../secrets/token-file.ts';
import { nncReadiness, WaitNotice, waitReason, type WaitReason } from './waiting.ts';
import { errorText } from '../log/error-text.ts';

export interface RunSidecarDeps {
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
  /** Resolves once stop() (or the abort signal) has shut everything down. */
  readonly stopped: Promise<void>;
  /** Clean shutdown; idempotent. */
  stop(): Promise<void>;
}

/** How far back the pool history is read at start (the policy's memory is bounded anyway). */
const HISTORY_LOAD_MS = 24 * 3600_000;

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

  // Configuration first: nothing is opened when it is bad.
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

  const metrics = new MetricsCollector({ defaultMetrics: deps.defaultMetrics ?? true });
  const podWaits = new PodWaitTracker(metrics);
  const recorder: EventRecorder =
    deps.events === false || options.dryRun
      ? noopEventRecorder
      : createEventRecorder({
          kc,
          component: 'azure-cns',
          host: options.nodeName,
          namePrefix: sidecarEventPrefix(options.nodeName),
          logger: root.child({ component: 'events' }),
        });

  // Events go to the node's NNC as last seen; pending ones are awaited on stop.
  let current: NodeNetworkConfig | undefined;
  const pendingEvents = new Set<Promise<void>>();
  const record = (details: EventDetails | undefined): void => {
    if (details === undefined || current === undefined) return;
    const involved: InvolvedObject = {
      apiVersion: `${GROUP}/${NNC_VERSION}`,
      kind: NNC_KIND,
      name: options.nodeName,
      namespace: options.namespace,
      ...(current.metadata.uid ? { uid: current.metadata.uid } : {}),
    };
    const p = recorder.recordEvent(involved, details).finally(() => pendingEvents.delete(p));
    pendingEvents.add(p);
  };

  const writer = createNncWriter({
    kc,
    name: options.nodeName,
    namespace: options.namespace,
    observedIds: () => current?.spec?.ipsNotInUse,
  });
  // What auto learned before a restart: the pool history in the node store.
  const history = store.poolHistory();
  let learned: Observation[] = [];
  try {
    learned = history?.load(Date.now() - HISTORY_LOAD_MS) ?? [];
  } catch (err) {
    log.warn('pool history not loaded', { error: errorText(err) });
  }
  const monitor = new PoolMonitor({
    store: asPoolIpStore(store),
    writer,
    logger: root,
    ...(deps.tickMs !== undefined ? { tickMs: deps.tickMs } : {}),
    ...(deps.writeWindowMs !== undefined ? { writeWindowMs: deps.writeWindowMs } : {}),
    ...(deps.writeBackoff ? { backoff: deps.writeBackoff } : {}),
    ...(deps.random ? { random: deps.random } : {}),
    policy: releasePolicy(options.releaseDelay, options.idleBudget),
    history: learned,
    dryRun: options.dryRun,
  });
  const advisor = history
    ? createAdvisor({
        history,
        scaler: () => monitor.snapshot().scaler,
        log,
      })
    : undefined;
  const historyRecorder = history
    ? recordPoolHistory({ history, observations$: monitor.observations$, log })
    : undefined;

  // Each valid NNC: the store follows it before the monitor sees it.
  const follower = followNnc(store, {
    logger: log,
    notify: (notice) =>
      record(
        notice.type === 'assigned-vanished'
          ? vanishedEvent(notice.records)
          : { type: 'Warning', reason: 'InvalidNetworkContainers', message: notice.message },
      ),
  });

  // The store follows the pods: leaked IPs reclaimed, reported addresses
  // adopted; no IP is handed out before it has (the node API's gate).
  const storeChanged = new Subject<void>();
  const leaks = new LeakReporter({
    logger: log,
    record,
    metrics: new LeakMetrics(metrics.registry),
  });
  const pods = followPods({
    store,
    nodeName: options.nodeName,
    graceMs: (options.leakGraceSeconds ?? DEFAULT_LEAK_GRACE_SECONDS) * 1000,
    logger: log,
    notify: (notice) => {
      leaks.notice(notice);
      // Reclaimed IPs can be marked now: the monitor decides again (a surplus, 0016).
      if (notice.type === 'reclaimed') storeChanged.next();
    },
  });

  // The node API binds before anything talks to the API server: a port in use
  // or a bad address fails the start here, with nothing else opened.
  let stopping = false;
  let lastWatchError: string | undefined;
  // Set once the informers run; until then the sidecar waits for them.
  const started: { informers?: NodeInformers } = {};
  const whyNotReady = (): WaitReason | undefined =>
    stopping
      ? { reason: 'stopping', say: false }
      : monitor.snapshot().ready
        ? undefined
        : waitReason(started.informers, lastWatchError, options.namespace, options.nodeName);
  const poolSource = poolStatusSource(
    () => ({ ...monitor.snapshot(), damping: monitor.damping(), advice: advisor?.current() }),
    store,
  );
  const api: NodeApi = createNodeApi({
    store,
    health: {
      healthy: () => !stopping && follower.healthy(),
      ready: () => !stopping && monitor.snapshot().ready,
      notReadyReason: () => whyNotReady()?.reason,
    },
    pool: {
      debugPool: () => ({
        ...poolSource.debugPool(),
        leaks: {
          ...pods.status(),
          reclaimed: { ...leaks.counts.reclaimed },
          adopted: leaks.counts.adopted,
          conflicts: leaks.counts.conflicts,
        },
      }),
    },
    assignGate: () => pods.notReady(),
    onUnmatchedRelease: (request) => pods.releaseAdopted(request.podNamespace, request.podName),
    onChange: (change) => {
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

  let bound: { host: string; port: number };
  const socket = options.listenSocket;
  try {
    bound =
      socket !== undefined
        ? await api
            .listenUnix(socket, {
              ...(options.listenGroup !== undefined ? { gid: options.listenGroup } : {}),
            })
            .then(() => ({ host: '', port: 0 }))
        : await api.listen(options.listenHost, options.listenPort);
  } catch (err) {
    pods.stop();
    store.close();
    const where =
      socket !== undefined ? `unix:${socket}` : `${options.listenHost}:${options.listenPort}`;
    throw new ConfigError(`--listen ${where}: ${errorText(err)}`);
  }
  const informers = startNodeInformers({
    kc,
    nodeName: options.nodeName,
    namespace: options.namespace,
    subnetState: options.subnetState,
    logger: root,
    ...(deps.watchBackoff ? { backoff: deps.watchBackoff } : {}),
  });
  started.informers = informers;
  // Until the first usable NNC, one the fulfiller has not finished (no
  // status, scaler or dynamic container yet) is waited for, not handed to the
  // monitor, which would warn about it. A malformed one still goes there and
  // is warned about; so is one that loses its status later (that is wrong).
  let hadUsable = false;
  const waitedFor = (n: NodeNetworkConfig): boolean => {
    const kind = nncReadiness(n, options.namespace, options.nodeName).kind;
    if (kind === 'usable') hadUsable = true;
    return !hadUsable && kind === 'waiting';
  };
  const nnc$ = informers.nnc$.pipe(
    tap((nnc) => {
      current = nnc;
      // What the inventory just took may be a running pod's address: adopt it now.
      if (follower.follow(nnc)) pods.inventorySynced();
    }),
    filter((n) => !waitedFor(n)),
    share(),
  );
  // Why it waits: an info line when the reason changes, and at most once a
  // minute while it does not (waiting.ts).
  const notice = new WaitNotice(deps.waitNoticeMs ?? 60_000);
  const sayWhy = (): void => {
    const why = whyNotReady();
    if (why !== undefined && !why.say) return;
    if (notice.shouldSay(why?.reason, Date.now())) log.info('waiting', { reason: why?.reason });
  };
  const subs: Subscription[] = [];
  const watches = [informers.pods, informers.nnc, informers.css];
  for (const w of watches) {
    subs.push(
      w.events$.subscribe((e) => {
        // A failed list is said at once; lists that merely complete one by
        // one are not news until the last one has.
        if (e.type === 'error') lastWatchError = e.info.message;
        if (e.type === 'error' || (e.type === 'synced' && watches.every((x) => x.synced))) sayWhy();
      }),
    );
  }
  subs.push(
    informers.nnc.cache$.subscribe(() => {
      if (watches.every((x) => x.synced)) sayWhy();
    }),
  );
  const waitTicker = setInterval(sayWhy, deps.waitNoticeMs ?? 60_000);
  waitTicker.unref();
  subs.push(
    monitor.outcomes$.subscribe((o) => {
      metrics.countReconcile(o.kind);
      if (o.wrote) metrics.countWrite(true);
      else if (o.kind === 'failed' && o.stage === 'write') metrics.countWrite(false);
      record(outcomeEvent(o));
    }),
    monitor.events$.subscribe((e) => record(monitorEvent(e))),
    // A lost watch is not a deleted pod: the follower reclaims only while synced.
    informers.pods.events$.subscribe((e) => {
      if (e.type === 'synced') pods.podsSynced(true);
      else if (e.type === 'error') pods.podsSynced(false);
    }),
    informers.pods.cache$.subscribe((list) => {
      pods.pods(list as PodView[]);
      podWaits.podsNow(list as PodLike[]);
    }),
  );
  metrics.setPoolSource(() => {
    const snap = monitor.snapshot();
    if (!snap.ready) return undefined;
    return {
      observation: poolObservation(
        { ...snap, damping: monitor.damping() },
        current ? dynamicContainers(current) : [],
      ),
      counts: store.counts(),
    };
  });

  monitor.start({
    demand$: informers.demand$,
    exhausted$: informers.exhausted$,
    nnc$,
    storeChanged$: storeChanged,
  });
  log.info('sidecar started', {
    namespace: options.namespace,
    listen: socket !== undefined ? `unix:${socket}` : `${bound.host}:${bound.port}`,
    nodeApiToken: tokenFile !== undefined,
    stateDir: options.stateDir,
    subnetState: options.subnetState,
    releaseDelay: formatReleaseDelay(options.releaseDelay),
    ...(options.releaseDelay.kind === 'auto' ? { idleBudget: options.idleBudget } : {}),
    historyLoaded: learned.length,
    leakGraceSeconds: options.leakGraceSeconds ?? DEFAULT_LEAK_GRACE_SECONDS,
    dryRun: options.dryRun,
  });

  let stopPromise: Promise<void> | undefined;
  let resolveStopped: () => void = () => {};
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  const timeoutMs = deps.shutdownTimeoutMs ?? 8000;
  const bounded = async (what: string, p: Promise<unknown>): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((r) => {
      timer = setTimeout(() => {
        log.warn('shutdown step timed out', { step: what });
        r();
      }, timeoutMs / 4);
    });
    await Promise.race([
      p.catch((e: unknown) => log.warn(`${what} failed`, { error: errorText(e) })),
      timedOut,
    ]);
    clearTimeout(timer);
  };
  const stop = (): Promise<void> => {
    stopPromise ??= (async () => {
      stopping = true;
      clearInterval(waitTicker);
      log.info('sidecar stopping');
      await bounded('informers', informers.stop());
      pods.stop();
      storeChanged.complete();
      await bounded('monitor', monitor.stop());
      historyRecorder?.stop();
      advisor?.stop();
      for (const s of subs) s.unsubscribe();
      await bounded('node api', api.close());
      await bounded('events', Promise.all([...pendingEvents]));
      if (loaded) await bounded('connections', loaded.connections.destroy());
      try {
        store.close();
      } catch (err) {
        log.warn('store close failed', { error: errorText(err) });
      }
      log.info('sidecar stopped');
      resolveStopped();
    })();
    return stopPromise;
  };
  deps.signal?.addEventListener('abort', () => void stop(), { once: true });

  return {
    host: bound.host,
    port: bound.port,
    ...(socket !== undefined ? { socket } : {}),
    url: `http://${bound.host.includes(':') ? `[${bound.host}]` : bound.host}:${bound.port}`,
    monitor,
    store,
    informers,
    metrics,
    pods,
    leaks,
    stopped,
    stop,
  };
}
