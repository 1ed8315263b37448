// The three informers the node agent needs, each turned into one input of the
// monitor: the node's pods (demand), its NodeNetworkConfig, and the
// namespace's ClusterSubnetStates (exhaustion). Every input emits only after
// its informer's first list (watchResource's cache$ guarantees that), so the
// monitor never acts on half the picture; informers restart with backoff on
// any error (watchResource again), and a relist after 410 Gone replaces the
// cache, so demand is recomputed from the whole truth, never lost.
import { LeanCoreV1Api, LeanCustomObjectsApi } from '../kube/lean/apis.ts';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Observable } from 'rxjs';
import { combineLatest, distinctUntilChanged, filter, map, startWith, tap } from 'rxjs';
import type { BackoffOptions } from '../kube/backoff.ts';
import { watchResource, type ResourceWatch } from '../kube/watch.ts';
import type { Logger } from '../log/logger.ts';
import type { ClusterSubnetState, NodeNetworkConfig } from '../nnc/types.ts';
import {
  CSS_PLURAL,
  CSS_VERSION,
  cssPath,
  GROUP,
  NNC_PLURAL,
  NNC_VERSION,
  nncPath,
} from '../nnc/types.ts';
import { countDemand, malformedCssField, malformedPodReason, subnetExhausted } from './demand.ts';
import { subnetNames } from '../nnc/family.ts';
import type { PodLike } from './demand.ts';
import type { SubnetStateMode } from './options.ts';

export interface NodeInformersOptions {
  kc: KubeConfig;
  nodeName: string;
  namespace: string;
  subnetState: SubnetStateMode;
  logger: Logger;
  backoff?: BackoffOptions;
}

export interface NodeInformers {
  pods: ResourceWatch<KubernetesObject>;
  nnc: ResourceWatch<KubernetesObject>;
  css: ResourceWatch<KubernetesObject>;
  /** Pods needing an IP; first value after the first pod list. */
  demand$: Observable<number>;
  /** This node's NNC, whenever it changes; nothing while it does not exist. */
  nnc$: Observable<NodeNetworkConfig>;
  /** Exhaustion of the node's subnet; first value after the first CSS list. */
  exhausted$: Observable<boolean>;
  stop(): Promise<void>;
}

export function startNodeInformers(opts: NodeInformersOptions): NodeInformers {
  const { kc, nodeName, namespace } = opts;
  const log = opts.logger.child({ component: 'informers' });
  const core = kc.makeApiClient(LeanCoreV1Api);
  const objects = kc.makeApiClient(LeanCustomObjectsApi);
  const podSelector = `spec.nodeName=${nodeName}`;
  const nncSelector = `metadata.name=${nodeName}`;
  const common = { kc, logger: log, ...(opts.backoff ? { backoff: opts.backoff } : {}) };

  const pods = watchResource<KubernetesObject>({
    ...common,
    path: '/api/v1/pods',
    fieldSelector: podSelector,
    listFn: async () =>
      (await core.listPodForAllNamespaces({
        fieldSelector: podSelector,
      })) as unknown as KubernetesListObject<KubernetesObject>,
    name: 'pods',
  });
  const nnc = watchResource<KubernetesObject>({
    ...common,
    path: nncPath(namespace),
    fieldSelector: nncSelector,
    listFn: async () =>
      (await objects.listNamespacedCustomObject({
        group: GROUP,
        version: NNC_VERSION,
        namespace,
        plural: NNC_PLURAL,
        fieldSelector: nncSelector,
      })) as KubernetesListObject<KubernetesObject>,
    name: 'nnc',
  });
  const css = watchResource<KubernetesObject>({
    ...common,
    path: cssPath(namespace),
    listFn: async () =>
      (await objects.listNamespacedCustomObject({
        group: GROUP,
        version: CSS_VERSION,
        namespace,
        plural: CSS_PLURAL,
      })) as KubernetesListObject<KubernetesObject>,
    name: 'css',
  });

  // Malformed pods are warned about once per name and never counted.
  const warned = new Set<string>();
  const demand$ = pods.cache$.pipe(
    tap((list) => {
      for (const p of list) {
        const reason = malformedPodReason(p);
        const key = `${p?.metadata?.namespace ?? ''}/${p?.metadata?.name ?? '?'}/${reason ?? ''}`;
        if (reason !== undefined && !warned.has(key)) {
          warned.add(key);
          log.warn('ignoring malformed pod', {
            pod: key,
            reason,
            field: reason.split(' ')[0],
            kind: 'Pod',
            namespace: p?.metadata?.namespace,
            name: p?.metadata?.name,
            resourceVersion: p?.metadata?.resourceVersion,
          });
        }
      }
    }),
    map((list) => countDemand(list as PodLike[], nodeName)),
    distinctUntilChanged(),
  );

  const nnc$ = nnc.cache$.pipe(
    map((list) => list.find((o) => o.metadata?.name === nodeName) as NodeNetworkConfig | undefined),
    filter((o): o is NodeNetworkConfig => o !== undefined),
    distinctUntilChanged(
      (a, b) =>
        a === b || (a.metadata.resourceVersion ?? '') === (b.metadata.resourceVersion ?? ''),
    ),
  );

  // Every family's subnet: either one's CSS exhausted counts (a dual-stack node has two).
  const subnet$ = nnc$.pipe(
    map((n) => subnetNames(n)),
    startWith([] as string[]),
    distinctUntilChanged((a, b) => a.join('\n') === b.join('\n')),
  );
  // A subnet state whose exhaustion cannot be read counts as not exhausted,
  // and is warned about once per version.
  const cssWarned = new Map<string, string>();
  const exhausted$ = combineLatest([
    css.cache$.pipe(
      tap((list) => {
        for (const o of list) {
          const field = malformedCssField(o);
          const key = `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
          const rv = o.metadata?.resourceVersion ?? '';
          if (field === undefined || cssWarned.get(key) === rv) continue;
          cssWarned.set(key, rv);
          log.warn('ignoring ClusterSubnetState', {
            kind: 'ClusterSubnetState',
            namespace: o.metadata?.namespace,
            name: o.metadata?.name,
            resourceVersion: rv,
            field,
            value: JSON.stringify((o as { status?: unknown }).status).slice(0, 200),
          });
        }
      }),
    ),
    subnet$,
  ]).pipe(
    map(([list, subnet]) =>
      subnetExhausted(list as ClusterSubnetState[], subnet, opts.subnetState),
    ),
    distinctUntilChanged(),
  );

  return {
    pods,
    nnc,
    css,
    demand$,
    nnc$,
    exhausted$,
    async stop() {
      await Promise.all([pods.stop(), nnc.stop(), css.stop()]);
    },
  };
}
