// The control plane's actors beside kube-apiserver that the local server
// plays in process (docs: DESIGN "The real control plane's other actors"):
// kube-controller-manager's owner-reference garbage collector and the pod
// GC's rule for pods bound to missing Nodes. Both on by default.
import type { Logger } from '../../src/log/logger.ts';
import { GarbageCollector } from './garbage-collector.ts';
import { PodGarbageCollector } from './pod-gc.ts';
import type { Registry } from './registry.ts';
import type { ResourceCatalog } from './resources.ts';
import type { ObjectStore } from './store.ts';

export interface ControllerOptions {
  garbageCollector?: boolean;
  podGc?: boolean;
  podGcOrphanMs?: number;
}

export interface ControllerDeps {
  store: ObjectStore;
  registry: Registry;
  catalog: ResourceCatalog;
  logger: Logger;
  now: () => Date;
}

export interface Controllers {
  garbageCollector?: GarbageCollector;
  podGc?: PodGarbageCollector;
  stop(): void;
}

export function startControllers(opts: ControllerOptions, deps: ControllerDeps): Controllers {
  const out: Controllers = {
    stop: () => {
      out.garbageCollector?.stop();
      out.podGc?.stop();
    },
  };
  if (opts.garbageCollector !== false) {
    deps.registry.garbageCollection = true;
    out.garbageCollector = new GarbageCollector(deps);
  }
  if (opts.podGc !== false)
    out.podGc = new PodGarbageCollector({
      ...deps,
      ...(opts.podGcOrphanMs !== undefined ? { quarantineMs: opts.podGcOrphanMs } : {}),
    });
  return out;
}
