// Builds a leading Fulfiller on the CIDR backend over the in-memory
// FakeCluster with a manual clock, for tests that drive it event by event.
import type { IpBackend } from '../../src/fulfiller/backend.ts';
import { CidrBackend } from '../../src/fulfiller/cidr-backend.ts';
import type { FulfillerConfig } from '../../src/fulfiller/config.ts';
import { Fulfiller } from '../../src/fulfiller/fulfiller.ts';
import { NodeBook } from '../../src/fulfiller/node-book.ts';
import type { FulfillerMetrics } from '../../src/fulfiller/metrics.ts';
import type { EventRecorder } from '../../src/kube/events.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { FakeClock } from './fake-clock.ts';
import { flush } from './fake-clock.ts';
import type { FakeCluster } from './fake-cluster.ts';

export interface HarnessOptions {
  cluster: FakeCluster;
  clock: FakeClock;
  config: FulfillerConfig;
  logger: Logger;
  events?: EventRecorder;
  newId?: () => string;
  /** Lead at once (default true). */
  lead?: boolean;
  /** Wraps the CIDR backend (to inject backend failures). */
  wrap?: (cidr: CidrBackend) => IpBackend;
  metrics?: FulfillerMetrics;
}

export function newFulfiller(opts: HarnessOptions) {
  const { cluster, clock, config } = opts;
  const book = new NodeBook(() => clock.now());
  const backend = new CidrBackend(
    { cidr: config.subnet, subnetName: 'pods', ...(opts.newId ? { newId: opts.newId } : {}) },
    book.addresses,
  );
  const fulfiller = new Fulfiller({
    config,
    book,
    lists: cluster.listApi,
    backend: opts.wrap ? opts.wrap(backend) : backend,
    nncApi: cluster.nncApi,
    lifecycleApi: cluster.lifecycleApi,
    cssApi: cluster.cssApi,
    logger: opts.logger,
    clock,
    random: () => 0.5,
    ...(opts.events ? { events: opts.events } : {}),
    ...(opts.newId ? { newId: opts.newId } : {}),
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
  });
  cluster.fulfiller = fulfiller;
  fulfiller.nodesSynced(cluster.nodeList());
  fulfiller.synced(cluster.list());
  if (opts.lead ?? true) fulfiller.lead();
  const settle = async (): Promise<void> => {
    // Let the queue, min intervals and backoffs play out in virtual time.
    for (let i = 0; i < 50; i++) {
      await clock.advance(1000);
      await flush();
      if (fulfiller.stats().pending === 0 && fulfiller.stats().active === 0) break;
    }
    await fulfiller.whenIdle();
  };
  return { fulfiller, backend, book, settle };
}
