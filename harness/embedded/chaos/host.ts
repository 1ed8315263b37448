// The chaos harness's component host: every sidecar and two fulfiller
// replicas (leader election on the Lease, as the Deployment runs them) as
// `bin/pool-monitor` processes, each with the kubeconfig the caller gives
// it. The harness kills them with SIGKILL and starts them again on the same
// state dir and port (processes.ts). Each fulfiller replica reaches the API
// server through a proxy of its own (replica-proxy.ts), so that a cut can be
// aimed at one replica (the standby).
import { KubeConfig } from '@kubernetes/client-node';
import type { FulfillerConfig } from '../../../src/fulfiller/config.ts';
import type { LeaseTimings } from '../../../src/leader/lease.ts';
import type { LogLevel } from '../../../src/log/levels.ts';
import type { ComponentHost, ControlPlane, NodeAgent } from '../components.ts';
import { ComponentProcess } from './processes.ts';
import { ReplicaProxy } from './replica-proxy.ts';

/** Lease timings under chaos: client-go's proportions, short enough for a run of a minute or two. */
export const CHAOS_LEASE_TIMINGS: LeaseTimings = {
  leaseDurationMs: 4000,
  renewDeadlineMs: 3000,
  retryPeriodMs: 500,
};

export interface ChaosHostOptions {
  /**
   * The kubeconfig file a component's process uses, written from the
   * KubeConfig the cluster gives that component (its own identity: the
   * fulfiller's service account, a sidecar's token bound to its Node).
   */
  kubeconfigFor(component: string, kc: KubeConfig): string | Promise<string>;
  logFile: string;
  logLevel: LogLevel;
  /** Fulfiller replicas (default 2: a leader and a standby). */
  replicas?: number;
  lease?: LeaseTimings;
  /** Told about a component that exited on its own (a crash of the product). */
  onCrash?: (component: string, how: string) => void;
}

const ms = (v: number): string => `${v}ms`;

/** The fulfiller command line for `config`, as the Deployment would run it. */
export function fulfillerArgs(
  config: FulfillerConfig,
  kubeconfig: string,
  lease: LeaseTimings,
  logLevel: LogLevel,
  port: number,
): string[] {
  const s = config.scaler;
  return [
    'fulfiller',
    '--kubeconfig',
    kubeconfig,
    '--namespace',
    config.namespace,
    // One --subnet per address family (dual-stack: two).
    ...(config.subnets ?? [config.subnet]).flatMap((cidr) => ['--subnet', cidr]),
    ...(config.subnetName !== undefined ? ['--subnet-name', config.subnetName] : []),
    '--batch',
    String(s.batchSize),
    '--request-threshold',
    String(s.requestThresholdPercent),
    '--release-threshold',
    String(s.releaseThresholdPercent),
    '--max',
    String(s.maxIPCount),
    '--exhaustion-threshold',
    String(config.exhaustionThreshold),
    '--exhaustion-hold',
    String(Math.round(config.exhaustionHoldMs / 1000)),
    '--workers',
    String(config.workers),
    '--log-level',
    logLevel,
    '--leader-elect',
    'true',
    '--leader-elect-lease-duration',
    ms(lease.leaseDurationMs),
    '--leader-elect-renew-deadline',
    ms(lease.renewDeadlineMs),
    '--leader-elect-retry-period',
    ms(lease.retryPeriodMs),
    '--listen',
    `127.0.0.1:${port}`,
  ];
}

/** Where the KubeConfig's API server listens. */
function apiAddress(kc: KubeConfig): { host: string; port: number } {
  const url = new URL(kc.getCurrentCluster()!.server);
  return { host: url.hostname, port: Number(url.port) };
}

/** The same KubeConfig (user, CA) with its server on the proxy's port, same host and scheme. */
function viaProxy(kc: KubeConfig, port: number): KubeConfig {
  const cluster = kc.getCurrentCluster()!;
  const server = new URL(cluster.server);
  server.port = String(port);
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: kc.clusters.map((c) =>
      c.name === cluster.name ? { ...c, server: server.toString().replace(/\/$/, '') } : c,
    ),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return out;
}

async function answers(url: string, path: string): Promise<boolean> {
  const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(2000) });
  await res.arrayBuffer();
  return res.status === 200;
}

export class ChaosHost implements ComponentHost {
  readonly sidecars = new Map<string, ComponentProcess>();
  readonly fulfillers: ComponentProcess[] = [];
  /** Each fulfiller replica's proxy to the API server, by replica name. */
  readonly proxies = new Map<string, ReplicaProxy>();
  /** How each component ended at the clean shutdown (SIGTERM): 'exit 0' expected. */
  readonly shutdowns: { component: string; how: string }[] = [];
  /** Each sidecar's kubeconfig file, by node (its token is replaced after the Node re-registers). */
  readonly sidecarKubeconfigs = new Map<string, string>();
  private readonly o: ChaosHostOptions;

  constructor(options: ChaosHostOptions) {
    this.o = options;
  }

  async startControlPlane(args: {
    config: FulfillerConfig;
    kc: KubeConfig;
  }): Promise<ControlPlane> {
    const lease = this.o.lease ?? CHAOS_LEASE_TIMINGS;
    const replicas = this.o.replicas ?? 2;
    for (let r = 0; r < replicas; r += 1) {
      const name = `fulfiller-${r}`;
      const proxy = await ReplicaProxy.start(apiAddress(args.kc));
      this.proxies.set(name, proxy);
      const kubeconfig = await this.o.kubeconfigFor(name, viaProxy(args.kc, proxy.port));
      this.fulfillers.push(
        new ComponentProcess({
          name,
          args: (port) => fulfillerArgs(args.config, kubeconfig, lease, this.o.logLevel, port),
          // The leader-election identity starts with POD_NAME.
          env: { POD_NAME: name },
          logFile: this.o.logFile,
          ready: (url) => answers(url, '/healthz'),
          onUnexpectedExit: (how) => this.o.onCrash?.(name, how),
        }),
      );
    }
    await Promise.all(this.fulfillers.map((f) => f.start()));
    return {
      stop: async () => {
        await Promise.all(this.fulfillers.map((f) => this.stopOne(f)));
        await Promise.all([...this.proxies.values()].map((p) => p.close()));
      },
    };
  }

  async startSidecar(place: {
    name: string;
    stateDir: string;
    kc: KubeConfig;
  }): Promise<NodeAgent> {
    const name = `sidecar-${place.name}`;
    const kubeconfig = await this.o.kubeconfigFor(name, place.kc);
    this.sidecarKubeconfigs.set(place.name, kubeconfig);
    const p = new ComponentProcess({
      name,
      args: (port) => [
        'sidecar',
        '--node-name',
        place.name,
        '--kubeconfig',
        kubeconfig,
        '--state-dir',
        place.stateDir,
        '--listen',
        `127.0.0.1:${port}`,
        '--log-level',
        this.o.logLevel,
      ],
      logFile: this.o.logFile,
      ready: (url) => answers(url, '/healthz'),
      onUnexpectedExit: (how) => this.o.onCrash?.(name, how),
    });
    this.sidecars.set(place.name, p);
    await p.start();
    return {
      get url() {
        return p.url;
      },
      get port() {
        return Number(new URL(p.url).port);
      },
      ready: () => answers(p.url, '/readyz').catch(() => false),
      stop: () => this.stopOne(p),
    };
  }

  private async stopOne(p: ComponentProcess): Promise<void> {
    this.shutdowns.push({ component: p.name, how: await p.stop() });
  }

  /** Every component process, sidecars first. */
  all(): ComponentProcess[] {
    return [...this.sidecars.values(), ...this.fulfillers];
  }
}
