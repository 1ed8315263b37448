// Wires the fulfiller to a real API server: the NNC and Node watches
// (restarting with backoff), the node book and the backend, the
// status/lifecycle/CSS adapters and an Event recorder, the leader elector
// with its write gate, the metrics and the --listen endpoints. Used by
// `bin/pool-monitor fulfiller` and by the embedded cluster. In this order:
// the listener first (a port in use fails the start at once, naming
// --listen), then the backend, then a wait for the CRDs (said once, retried
// with backoff, /readyz says why), and only then the watches and the
// leader election.
import { FULFILLER_EVENT_PREFIX } from '../kube/event-names.ts';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type {
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  V1Lease,
} from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { CSS_PLURAL, CSS_VERSION, GROUP, NNC_PLURAL, NNC_VERSION, nncPath } from '../nnc/types.ts';
import type { EventsApi } from '../kube/events.ts';
import { createEventRecorder } from '../kube/events.ts';
import { watchResource } from '../kube/watch.ts';
import { waitForCrds } from '../kube/wait-for-crds.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import type { ResourceWatch } from '../kube/watch.ts';
import { systemClock } from '../clock/clock.ts';
import { LeaderElector } from '../leader/elector.ts';
import { kubeLeaseApi, stateOf } from '../leader/kube-lease.ts';
import type { LeaseTimings } from '../leader/lease.ts';
import { CLIENT_GO_TIMINGS } from '../leader/lease.ts';
import type { Logger } from '../log/logger.ts';
import type { BackendFactory, IpBackend } from './backend.ts';
import { CidrBackend } from './cidr-backend.ts';
import type { FulfillerConfig } from './config.ts';
import { Fulfiller, NotLeaderError } from './fulfiller.ts';
import { startFulfillerHttp } from './http.ts';
import type { FulfillerHttp } from './http.ts';
import {
  kubeClusterListApi,
  kubeNncLifecycleApi,
  kubeNncStatusApi,
  kubeSubnetStateApi,
} from './kube-api.ts';
import { NodeBook, nextSeq } from './node-book.ts';
import { FulfillerMetrics } from './metrics.ts';
import type { NodeObject } from './nodes.ts';
import type { SubnetStateApi } from './ports.ts';

/** The Lease the replicas compete for, in the fulfiller's namespace. */
export const LEASE_NAME = 'pool-monitor-fulfiller';

export interface LeaderElectionOptions extends Partial<LeaseTimings> {
  /** Default: $POD_NAME (else the host name) plus "_" and a random uuid. */
  identity?: string;
}

export interface StartFulfillerOptions {
  kc: KubeConfig;
  config: FulfillerConfig;
  logger: Logger;
  /** Builds the backend (then awaits its start()); defaults to a CIDR backend on `config.subnets`. */
  backend?: BackendFactory;
  /** Record Kubernetes Events (default true). */
  events?: boolean;
  /** Compete for the Lease (client-go timings unless given); absent or false: lead at once. */
  leaderElection?: LeaderElectionOptions | false;
  /** Serve /healthz, /readyz and /metrics here. */
  listen?: { host: string; port: number };
  /** Node's default process metrics in the registry (default true). */
  defaultMetrics?: boolean;
  /** Retry delays while the CRDs are not served (1 s doubling to a minute by default). */
  crdWaitBackoff?: BackoffOptions;
}

export interface RunningFulfiller {
  fulfiller: Fulfiller;
  backend: IpBackend;
  book: NodeBook;
  metrics: FulfillerMetrics;
  watch: ResourceWatch<KubernetesObject>;
  nodeWatch: ResourceWatch<KubernetesObject>;
  elector: LeaderElector | undefined;
  http: FulfillerHttp | undefined;
  /** Resolves once both watches have listed. */
  whenSynced(): Promise<void>;
  /** Steps down (releasing the lease), stops the watches and the listener; idempotent. */
  stop(): Promise<void>;
}

/** client-go's identity: the pod's name plus a random suffix, unique per process. */
export function leaderIdentity(env: NodeJS.ProcessEnv = process.env): string {
  return `${env.POD_NAME || hostname()}_${randomUUID()}`;
}

/** Events go out only while the lease is held, checked as each request is made. */
function gatedEventsApi(api: EventsApi, canWrite: () => boolean): EventsApi {
  const refuse = () => Promise.reject(new NotLeaderError('this replica does not lead'));
  return {
    createNamespacedEvent: (req) => (canWrite() ? api.createNamespacedEvent(req) : refuse()),
    replaceNamespacedEvent: (req) => (canWrite() ? api.replaceNamespacedEvent(req) : refuse()),
  };
}

function gatedCss(api: SubnetStateApi, canWrite: () => boolean): SubnetStateApi {
  const gate = (): void => {
    if (!canWrite()) throw new NotLeaderError('this replica does not lead');
  };
  return {
    publish: async (name, status) => {
      gate();
      return api.publish(name, status);
    },
  };
}

export async function startFulfiller(options: StartFulfillerOptions): Promise<RunningFulfiller> {
  const { kc, config } = options;
  const logger = options.logger.child({ component: 'fulfiller' });
  const metrics = new FulfillerMetrics({ defaultMetrics: options.defaultMetrics ?? true });
  const book = new NodeBook(() => systemClock.now());

  // The listener first: a port in use ends the start here, naming the flag,
  // before any request to the API server or ARM and before any lease.
  let stopping = false;
  let crdsWaiting: string | undefined;
  const started: { fulfiller?: Fulfiller } = {};
  let http: FulfillerHttp | undefined;
  if (options.listen) {
    const { host, port } = options.listen;
    try {
      http = await startFulfillerHttp(
        options.listen,
        {
          ready: () => started.fulfiller?.ready ?? false,
          waiting: () =>
            crdsWaiting ?? (started.fulfiller ? started.fulfiller.waitReason() : 'starting'),
          leading: () => started.fulfiller?.leading ?? false,
          stopping: () => stopping,
        },
        metrics,
      );
    } catch (err) {
      const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      throw new Error(`--listen ${where}: ${(err as Error).message}`, { cause: err });
    }
    logger.info('listening', { url: http.url });
  }

  let backend: IpBackend;
  try {
    backend = options.backend
      ? await options.backend({ addresses: book.addresses, registry: metrics.registry, logger })
      : new CidrBackend(
          { cidrs: config.subnets ?? [config.subnet], subnetName: config.subnetName },
          book.addresses,
        );
    // Before any term: the first CSS published carries the backend's real free count.
    await backend.start?.();
  } catch (err) {
    await http?.close();
    throw err;
  }

  let elector: LeaderElector | undefined;
  const canWrite = (): boolean => (elector ? elector.canWrite() : true);
  const recorder =
    options.events === false
      ? undefined
      : createEventRecorder({
          api: gatedEventsApi(kc.makeApiClient(CoreV1Api), canWrite),
          component: 'ipam-fulfiller',
          namePrefix: FULFILLER_EVENT_PREFIX,
          logger,
        });
  const fulfiller = new Fulfiller({
    config,
    book,
    backend,
    nncApi: kubeNncStatusApi(kc, config.namespace),
    lifecycleApi: kubeNncLifecycleApi(kc, config.namespace),
    cssApi: gatedCss(kubeSubnetStateApi(kc, config.namespace), canWrite),
    logger,
    metrics,
    canWrite,
    lists: kubeClusterListApi(kc, config.namespace),
    ...(recorder ? { events: recorder } : {}),
  });
  started.fulfiller = fulfiller;

  const objects = kc.makeApiClient(CustomObjectsApi);
  // No watch, list or lease before the CRDs are served: without them every
  // watch would fail with 404 at each restart.
  await waitForCrds({
    group: GROUP,
    resources: [
      { version: NNC_VERSION, plural: NNC_PLURAL },
      { version: CSS_VERSION, plural: CSS_PLURAL },
    ],
    discover: async (version) =>
      (await objects.getAPIResources({ group: GROUP, version })).resources.map((r) => r.name),
    logger,
    ...(options.crdWaitBackoff ? { backoff: options.crdWaitBackoff } : {}),
    onWaiting: (reason) => (crdsWaiting = reason),
  });

  const core = kc.makeApiClient(CoreV1Api);
  const watch = watchResource<KubernetesObject>({
    kc,
    path: nncPath(config.namespace),
    listFn: async () =>
      (await objects.listNamespacedCustomObject({
        group: GROUP,
        version: NNC_VERSION,
        namespace: config.namespace,
        plural: NNC_PLURAL,
      })) as KubernetesListObject<KubernetesObject>,
    backoff: config.backoff,
    logger,
    name: 'nnc',
  });
  const nodeWatch = watchResource<KubernetesObject>({
    kc,
    path: '/api/v1/nodes',
    listFn: async () => (await core.listNode()) as KubernetesListObject<KubernetesObject>,
    backoff: config.backoff,
    logger,
    name: 'node',
  });
  // A list's answer is newer than anything received before it was sent
  // (versions.ts): each watch's lists are stamped when they go out.
  const listSent = { nnc: 0, node: 0 };
  const subs = [
    watch.events$.subscribe((event) => {
      if (event.type === 'add' || event.type === 'update')
        fulfiller.upsert(event.object as NodeNetworkConfig);
      else if (event.type === 'delete') fulfiller.remove(event.object as NodeNetworkConfig);
      else if (event.type === 'listing') listSent.nnc = nextSeq();
      else if (event.type === 'listed')
        fulfiller.synced(event.items as NodeNetworkConfig[], listSent.nnc);
      // A watch that resumes from its last version lists nothing: it runs again.
      else if (event.type === 'synced') fulfiller.watchUp('nnc');
      else if (event.type === 'error') fulfiller.watchDown('nnc', event.info.message);
    }),
    nodeWatch.events$.subscribe((event) => {
      if (event.type === 'add' || event.type === 'update')
        fulfiller.upsertNode(event.object as NodeObject);
      else if (event.type === 'delete') fulfiller.removeNode(event.object as NodeObject);
      else if (event.type === 'listing') listSent.node = nextSeq();
      else if (event.type === 'listed')
        fulfiller.nodesSynced(event.items as NodeObject[], listSent.node);
      else if (event.type === 'synced') fulfiller.watchUp('node');
      else if (event.type === 'error') fulfiller.watchDown('node', event.info.message);
    }),
  ];

  let leaseWatch: ResourceWatch<KubernetesObject> | undefined;
  if (options.leaderElection) {
    const le = options.leaderElection;
    const timings: LeaseTimings = {
      leaseDurationMs: le.leaseDurationMs ?? CLIENT_GO_TIMINGS.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs ?? CLIENT_GO_TIMINGS.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs ?? CLIENT_GO_TIMINGS.retryPeriodMs,
    };
    elector = new LeaderElector({
      identity: le.identity ?? leaderIdentity(),
      api: kubeLeaseApi(kc, config.namespace, LEASE_NAME),
      timings,
      clock: systemClock,
      logger,
      onStartedLeading: () => {
        metrics.setLeader(true);
        fulfiller.lead();
      },
      onStoppedLeading: async () => {
        metrics.setLeader(false);
        await fulfiller.follow();
      },
    });
    // Every change of the Lease reaches the elector at once: a standby times
    // the holder's lease from its last renewal and takes a released lease at once.
    const leases = kc.makeApiClient(CoordinationV1Api);
    const fieldSelector = `metadata.name=${LEASE_NAME}`;
    leaseWatch = watchResource<KubernetesObject>({
      kc,
      path: `/apis/coordination.k8s.io/v1/namespaces/${config.namespace}/leases`,
      fieldSelector,
      listFn: async () =>
        (await leases.listNamespacedLease({
          namespace: config.namespace,
          fieldSelector,
        })) as KubernetesListObject<KubernetesObject>,
      backoff: config.backoff,
      logger,
      name: 'lease',
    });
    const e = elector;
    subs.push(
      leaseWatch.events$.subscribe((event) => {
        if (event.type === 'update' || event.type === 'add')
          e.seen(stateOf(event.object as V1Lease));
      }),
    );
    logger.info('leader election', { lease: LEASE_NAME, identity: e.identity, ...timings });
    e.start();
  } else {
    metrics.setLeader(true);
    fulfiller.lead();
  }

  let stopped: Promise<void> | undefined;
  return {
    fulfiller,
    backend,
    book,
    metrics,
    watch,
    nodeWatch,
    elector,
    http,
    whenSynced: async () => {
      await Promise.all([watch.whenSynced(), nodeWatch.whenSynced()]);
    },
    stop() {
      stopped ??= (async () => {
        stopping = true;
        // Nothing writes any more before the lease is let go.
        if (elector) await elector.stop(true);
        await fulfiller.follow();
        await Promise.all([watch.stop(), nodeWatch.stop(), leaseWatch?.stop()]);
        for (const s of subs) s.unsubscribe();
        await fulfiller.stop();
        // Events are recorded in the background; write the last ones before the
        // caller closes the API connections.
        await recorder?.flush();
        await http?.close();
        logger.info('fulfiller stopped');
      })();
      return stopped;
    },
  };
}
