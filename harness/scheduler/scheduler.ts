// The embedded cluster's scheduler: binds every pod that has no node (one
// created with `kubectl run` or `kubectl apply -f`) to the Ready node with
// the most free room and no NoSchedule taint the pod does not tolerate
// (pick.ts), through the pods/binding subresource as kube-scheduler does,
// with a `Scheduled` Event. A pod that fits nowhere gets the condition
// PodScheduled=False (Unschedulable) and a `FailedScheduling` Event, and is
// tried again when a node changes and every few seconds.
//
// It watches only what it needs all the time: pods without a node
// (fieldSelector spec.nodeName=) and nodes. How full each node is, it reads
// with one list of pods per scheduling pass, and passes only happen while
// pods wait: the workload's own pods arrive bound and cost it nothing.
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeConfig, V1Node, V1Pod } from '@kubernetes/client-node';
import { apiErrorInfo } from '../../src/kube/errors.ts';
import { createEventRecorder, noopEventRecorder } from '../../src/kube/events.ts';
import type { EventDetails, EventRecorder } from '../../src/kube/events.ts';
import { watchResource } from '../../src/kube/watch.ts';
import type { Logger } from '../../src/log/logger.ts';
import { needsNode, nodeView, pickNode, podsPerNode } from './pick.ts';

export interface SimSchedulerOptions {
  kc: KubeConfig;
  logger: Logger;
  /** Kubernetes Events (default true). */
  events?: boolean;
  /** How often pods that fit nowhere are tried again; default 5 s. */
  retryMs?: number;
}

export interface SchedulerCounters {
  passes: number;
  bound: number;
  unschedulable: number;
  errors: number;
}

export interface RunningSimScheduler {
  readonly counters: SchedulerCounters;
  /** Resolves once both watches have listed. */
  whenSynced(): Promise<void>;
  stop(): Promise<void>;
}

const UNSCHEDULED = 'spec.nodeName=';

function podName(p: V1Pod): string {
  return `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? ''}`;
}

/** Oldest first, then by name: pods are scheduled in the order they came. */
export function schedulingOrder(a: V1Pod, b: V1Pod): number {
  const ta = String(a.metadata?.creationTimestamp ?? '');
  const tb = String(b.metadata?.creationTimestamp ?? '');
  if (ta !== tb) return ta < tb ? -1 : 1;
  return podName(a) < podName(b) ? -1 : podName(a) > podName(b) ? 1 : 0;
}

export function startSimScheduler(options: SimSchedulerOptions): RunningSimScheduler {
  const { kc } = options;
  const log = options.logger.child({ component: 'scheduler' });
  const core = kc.makeApiClient(CoreV1Api);
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const recorder: EventRecorder =
    options.events === false
      ? noopEventRecorder
      : createEventRecorder({ kc, component: 'default-scheduler', logger: log });
  const retryMs = options.retryMs ?? 5000;
  const counters: SchedulerCounters = { passes: 0, bound: 0, unschedulable: 0, errors: 0 };

  const waiting = watchResource<V1Pod>({
    kc,
    path: '/api/v1/pods',
    fieldSelector: UNSCHEDULED,
    listFn: () => core.listPodForAllNamespaces({ fieldSelector: UNSCHEDULED }),
    logger: log,
    name: 'unscheduled-pods',
  });
  const nodes = watchResource<V1Node>({
    kc,
    path: '/api/v1/nodes',
    listFn: () => core.listNode(),
    logger: log,
    name: 'nodes',
  });

  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;
  let retryTimer: NodeJS.Timeout | undefined;
  /** The last reason each pod was refused for: told once, not on every retry. */
  const refused = new Map<string, string>();

  const event = (pod: V1Pod, details: EventDetails): void => {
    void recorder.recordEvent(
      {
        apiVersion: 'v1',
        kind: 'Pod',
        name: pod.metadata?.name ?? '',
        namespace: pod.metadata?.namespace ?? 'default',
        ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}),
      },
      details,
    );
  };

  const markUnschedulable = async (pod: V1Pod, reason: string): Promise<void> => {
    const key = podName(pod);
    if (refused.get(key) === reason) return;
    refused.set(key, reason);
    counters.unschedulable += 1;
    log.info('pod unschedulable', { pod: key, reason });
    event(pod, { type: 'Warning', reason: 'FailedScheduling', message: reason });
    const condition = {
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: reason,
      lastTransitionTime: new Date(),
    };
    await core
      .patchNamespacedPodStatus(
        {
          name: pod.metadata?.name ?? '',
          namespace: pod.metadata?.namespace ?? 'default',
          body: { status: { conditions: [condition] } },
        },
        mergePatch,
      )
      .catch((err: unknown) =>
        log.debug('pod condition write failed', { pod: key, error: apiErrorInfo(err).message }),
      );
  };

  const bind = async (pod: V1Pod, node: string): Promise<'bound' | 'gone' | 'retry'> => {
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? 'default';
    try {
      await core.createNamespacedPodBinding({
        name,
        namespace,
        body: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name, namespace },
          target: { apiVersion: 'v1', kind: 'Node', name: node },
        },
      });
    } catch (err) {
      const info = apiErrorInfo(err);
      // Bound meanwhile (409) or deleted (404): nothing left to do.
      if (info.statusCode === 409 || info.statusCode === 404) return 'gone';
      counters.errors += 1;
      log.warn('pod binding failed', { pod: podName(pod), node, error: info.message });
      return 'retry';
    }
    counters.bound += 1;
    refused.delete(podName(pod));
    log.info('pod scheduled', { pod: podName(pod), node });
    event(pod, {
      type: 'Normal',
      reason: 'Scheduled',
      message: `Successfully assigned ${podName(pod)} to ${node}`,
    });
    return 'bound';
  };

  const pass = async (): Promise<void> => {
    const pods = waiting.list().filter(needsNode).sort(schedulingOrder);
    if (pods.length === 0 || !nodes.synced) return;
    counters.passes += 1;
    let used: Map<string, number>;
    try {
      used = podsPerNode((await core.listPodForAllNamespaces()).items);
    } catch (err) {
      counters.errors += 1;
      log.warn('pod list failed', { error: apiErrorInfo(err).message });
      scheduleRetry();
      return;
    }
    const views = nodes.list().map((n) => nodeView(n, used.get(n.metadata?.name ?? '') ?? 0));
    let pending = false;
    for (const pod of pods) {
      if (stopped) return;
      const pick = pickNode(views, pod.spec?.nodeSelector ?? {}, pod.spec?.tolerations ?? []);
      if ('reason' in pick) {
        pending = true;
        await markUnschedulable(pod, pick.reason);
        continue;
      }
      const outcome = await bind(pod, pick.node);
      if (outcome === 'bound') {
        const view = views.find((v) => v.name === pick.node);
        if (view) view.used += 1;
      } else if (outcome === 'retry') pending = true;
    }
    if (pending) scheduleRetry();
  };

  function scheduleRetry(): void {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      kick();
    }, retryMs);
  }

  /** One pass at a time; changes during a pass cause one more after it. */
  function kick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err: unknown) => {
        counters.errors += 1;
        log.error('scheduling pass failed', { error: (err as Error).message });
      })
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          kick();
        }
      });
  }

  const subs = [
    waiting.events$.subscribe((e) => {
      if (e.type === 'synced' || e.type === 'add' || e.type === 'update') kick();
      if (e.type === 'delete') refused.delete(podName(e.object));
    }),
    nodes.events$.subscribe((e) => {
      if (e.type === 'synced' || e.type === 'add' || e.type === 'update') kick();
    }),
  ];

  return {
    counters,
    async whenSynced() {
      await Promise.all([waiting.whenSynced(), nodes.whenSynced()]);
    },
    async stop() {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      for (const s of subs) s.unsubscribe();
      await Promise.all([waiting.stop(), nodes.stop()]);
      await running;
      await recorder.flush(); // Events in flight are written before the connections close
    },
  };
}
