// Wires the fulfiller to a real API server: the NNC watch (restarting with
// backoff), the CIDR backend, the status/CSS/node adapters and an Event
// recorder. Used by `bin/pool-monitor fulfiller` and by the embedded cluster.
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Subscription } from 'rxjs';
import type { NodeNetworkConfig } from '../nnc/types.ts';
import { GROUP, NNC_PLURAL, NNC_VERSION, nncPath } from '../nnc/types.ts';
import { createEventRecorder } from '../kube/events.ts';
import { watchResource } from '../kube/watch.ts';
import type { ResourceWatch } from '../kube/watch.ts';
import type { Logger } from '../log/logger.ts';
import type { IpBackend } from './backend.ts';
import { CidrBackend } from './cidr-backend.ts';
import type { FulfillerConfig } from './config.ts';
import { Fulfiller } from './fulfiller.ts';
import { kubeNncStatusApi, kubeNodeIpLookup, kubeSubnetStateApi } from './kube-api.ts';

export interface StartFulfillerOptions {
  kc: KubeConfig;
  config: FulfillerConfig;
  logger: Logger;
  /** Defaults to a CIDR backend on `config.subnet`. */
  backend?: IpBackend;
  /** Record Kubernetes Events (default true). */
  events?: boolean;
}

export interface RunningFulfiller {
  fulfiller: Fulfiller;
  backend: IpBackend;
  watch: ResourceWatch<KubernetesObject>;
  /** Stops the watch, finishes actions in progress; idempotent. */
  stop(): Promise<void>;
}

export function startFulfiller(options: StartFulfillerOptions): RunningFulfiller {
  const { kc, config } = options;
  const logger = options.logger.child({ component: 'fulfiller' });
  const backend =
    options.backend ?? new CidrBackend({ cidr: config.subnet, subnetName: config.subnetName });
  const events =
    options.events === false
      ? undefined
      : createEventRecorder({ kc, component: 'ipam-fulfiller', logger });
  const fulfiller = new Fulfiller({
    config,
    backend,
    nncApi: kubeNncStatusApi(kc, config.namespace),
    cssApi: kubeSubnetStateApi(kc, config.namespace),
    nodeIp: kubeNodeIpLookup(kc),
    logger,
    events,
  });
  const objects = kc.makeApiClient(CustomObjectsApi);
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
  const sub: Subscription = watch.events$.subscribe((event) => {
    switch (event.type) {
      case 'add':
      case 'update':
        fulfiller.upsert(event.object as NodeNetworkConfig);
        break;
      case 'delete':
        fulfiller.remove(event.object as NodeNetworkConfig);
        break;
      case 'synced':
        fulfiller.synced(watch.list() as NodeNetworkConfig[]);
        break;
      default:
        break;
    }
  });
  let stopping: Promise<void> | undefined;
  return {
    fulfiller,
    backend,
    watch,
    stop() {
      stopping ??= (async () => {
        await watch.stop();
        sub.unsubscribe();
        await fulfiller.stop();
        // Events are recorded in the background; write the last ones before the
        // caller closes the API connections.
        await events?.flush();
        logger.info('fulfiller stopped');
      })();
      return stopping;
    },
  };
}
