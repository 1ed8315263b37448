// Where the embedded cluster runs the product: its fulfiller and one sidecar
// per node. By default both run in this process (cheap: a thousand nodes fit);
// the chaos harness runs them as processes it can kill -9
// (harness/embedded/chaos/host.ts). The cluster and the kubelets only see these
// small handles: a node agent's URL and readiness, a control plane to stop.
// A host may also run some nodes' simulated kubelets beside their sidecars
// (startKubelet: the worker host does, to share the work between two cores);
// the others run in this process.
import type { KubeConfig } from '@kubernetes/client-node';
import type { BackendFactory } from '../../src/fulfiller/backend.ts';
import type { FulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller, type RunningFulfiller } from '../../src/fulfiller/run.ts';
import type { Logger } from '../../src/log/logger.ts';
import { DEFAULT_NAMESPACE } from '../../src/nnc/types.ts';
import type { SidecarOptions } from '../../src/sidecar/options.ts';
import { runSidecar, type RunningSidecar, type RunSidecarDeps } from '../../src/sidecar/run.ts';
import type { PodEndedWaiting, PodWait } from '../kubelet/kubelet.ts';
import type { RunningSimKubelet } from '../kubelet/start.ts';

/** One node's sidecar, wherever it runs. */
export interface NodeAgent {
  /** Its node API, e.g. http://127.0.0.1:PORT (may move when a process restarts). */
  readonly url: string;
  /** The port of that URL. */
  readonly port: number;
  /** Its first valid NNC arrived and its store is loaded (/readyz). */
  ready(): Promise<boolean>;
  stop(): Promise<void>;
  /** The sidecar itself, when it runs in this process. */
  readonly inProcess?: RunningSidecar;
}

/** The fulfiller replica(s). */
export interface ControlPlane {
  stop(): Promise<void>;
  /** The fulfiller itself, when it runs in this process. */
  readonly inProcess?: RunningFulfiller;
}

export interface SidecarPlace {
  name: string;
  /** Position in node order. */
  index: number;
  stateDir: string;
  kc: KubeConfig;
  logger: Logger;
  events: boolean;
  /** 0 (default): a free port. */
  listenPort?: number;
  /** --leak-grace of the sidecar (default the product's). */
  leakGraceSeconds?: number;
  /** The node API on this unix socket with this token (embedded --netns: the plugin asks there), not TCP. */
  nodeApi?: { socket: string; tokenFile: string };
}

/** One node's simulated kubelet, wherever it runs. */
export interface NodeKubelet {
  /** Resolves once its pod watch has listed the node's pods. */
  whenSynced(): Promise<void>;
  /**
   * Pods it has not told the fate of yet (onRunning or onEndedWaiting): still
   * setting up, or still winding a setup down after the pod was ended. Once
   * it answers, whatever it told before has been told here.
   */
  settingUp(): Promise<number>;
  stop(): Promise<void>;
  /** The kubelet itself, when it runs in this process. */
  readonly inProcess?: RunningSimKubelet;
}

/** What a host needs to run a node's kubelet: the node, the admin's access, where to report. */
export interface KubeletPlace {
  name: string;
  /** Position in node order. */
  index: number;
  /** The node's InternalIP. */
  nodeIp: string;
  /** The admin's configuration (the kubelets act as the harness, not as the product). */
  kc: KubeConfig;
  onRunning?: (wait: PodWait) => void;
  onEndedWaiting?: (ended: PodEndedWaiting) => void;
}

export interface ComponentHost {
  startControlPlane(args: {
    kc: KubeConfig;
    config: FulfillerConfig;
    logger: Logger;
    events: boolean;
    /** The fulfiller's backend (default: CIDR on the config's subnet). */
    backend?: BackendFactory;
  }): Promise<ControlPlane>;
  startSidecar(place: SidecarPlace): Promise<NodeAgent>;
  /**
   * Starts the node's kubelet beside the node's sidecar, calling it over HTTP
   * as in this process; undefined: this node's kubelet runs in this process,
   * as every kubelet does with a host without it.
   */
  startKubelet?(place: KubeletPlace): Promise<NodeKubelet> | undefined;
  /** Ends what the host itself runs (e.g. a worker thread), after every component it started stopped. */
  close?(): Promise<void>;
}

/** The sidecar options of an embedded node. */
export function embeddedSidecarOptions(
  place: Pick<SidecarPlace, 'name' | 'stateDir' | 'listenPort' | 'leakGraceSeconds' | 'nodeApi'>,
): SidecarOptions {
  return {
    nodeName: place.name,
    namespace: DEFAULT_NAMESPACE,
    stateDir: place.stateDir,
    listenHost: '127.0.0.1',
    listenPort: place.listenPort ?? 0,
    logLevel: 'info',
    subnetState: 'name',
    releaseDelay: { kind: 'fixed', seconds: 0 },
    ...(place.leakGraceSeconds !== undefined ? { leakGraceSeconds: place.leakGraceSeconds } : {}),
    ...(place.nodeApi
      ? { listenSocket: place.nodeApi.socket, nodeApiTokenFile: place.nodeApi.tokenFile }
      : {}),
    // The sidecar's own variable (--schedule-signal), so two runs can compare it off and on.
    scheduleSignal: process.env.POOL_MONITOR_SCHEDULE_SIGNAL !== 'false',
    dryRun: false,
  };
}

/** Fulfiller and sidecars in this process, sharing its KubeConfig and connection pool. */
export function inProcessHost(
  tuning: Pick<RunSidecarDeps, 'tickMs' | 'writeWindowMs' | 'shutdownTimeoutMs'> = {},
): ComponentHost {
  return {
    async startControlPlane({ kc, config, logger, events, backend }) {
      // One fulfiller in this process: no Lease to compete for. It creates the NNCs.
      const running = await startFulfiller({
        kc,
        config,
        logger,
        events,
        leaderElection: false,
        defaultMetrics: false,
        ...(backend ? { backend } : {}),
      });
      return { inProcess: running, stop: () => running.stop() };
    },
    async startSidecar(place) {
      const { kc, logger, events } = place;
      const sidecar = await runSidecar(embeddedSidecarOptions(place), {
        kc,
        logger,
        defaultMetrics: false,
        events,
        // Node state lives as long as this process: no fsync per commit (docs/decisions/0005).
        storeSynchronous: 'NORMAL',
        ...tuning,
      });
      return {
        url: sidecar.socket !== undefined ? `unix:${sidecar.socket}` : sidecar.url,
        port: sidecar.port,
        ready: () => Promise.resolve(sidecar.monitor.snapshot().ready),
        stop: () => sidecar.stop(),
        inProcess: sidecar,
      };
    },
  };
}
