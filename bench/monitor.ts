// Benchmarks of the scaling core and the pool monitor pipeline. Prints:
//  - pure decisions per second (normalise scaler + exhaustion + target),
//  - input events per second through the PoolMonitor with in-memory ports,
//    and how many reconciles and writes those events coalesced into.
// Run: node bench/monitor.ts
import { Subject, asapScheduler } from 'rxjs';
import { silentLogger } from '../src/log/logger.ts';
import { MemoryPoolStore } from '../test/monitor/memory-store.ts';
import { PoolMonitor } from '../src/monitor/pool-monitor.ts';
import type { DesiredSpec, NncSpecWriter } from '../src/monitor/ports.ts';
import type { NodeNetworkConfig } from '../src/nnc/types.ts';
import { applyExhaustion, normaliseScaler } from '../src/scaling/scaler.ts';
import { calculateTarget } from '../src/scaling/target.ts';

function benchDecisions(n: number): number {
  const raw = { batchSize: 16, requestThresholdPercent: 50, maxIPCount: 250 };
  let sink = 0;
  const start = performance.now();
  for (let i = 0; i < n; i += 1) {
    const { scaler } = normaliseScaler(raw);
    sink += calculateTarget(i % 300, applyExhaustion(scaler, (i & 7) === 0));
  }
  const ms = performance.now() - start;
  if (sink < 0) console.log(sink);
  return (n / ms) * 1000;
}

async function benchPipeline(
  events: number,
): Promise<{ perSecond: number; reconciles: number; writes: number }> {
  const mem = new MemoryPoolStore();
  mem.add(250, 'Available');
  let writes = 0;
  const writer: NncSpecWriter = {
    writeSpec: (_spec: DesiredSpec) => {
      writes += 1;
      return Promise.resolve({ generation: writes });
    },
  };
  const monitor = new PoolMonitor({
    store: mem,
    writer,
    logger: silentLogger(),
    scheduler: asapScheduler,
    writeWindowMs: 0,
    tickMs: 3_600_000,
  });
  let reconciles = 0;
  monitor.outcomes$.subscribe(() => (reconciles += 1));
  const demand$ = new Subject<number>();
  const exhausted$ = new Subject<boolean>();
  const nnc$ = new Subject<NodeNetworkConfig>();
  monitor.start({ demand$, exhausted$, nnc$ });
  const ids = [...mem.ips.keys()];
  exhausted$.next(false);
  nnc$.next({
    metadata: { name: 'bench', generation: 1 },
    spec: { requestedIPCount: 16, ipsNotInUse: [] },
    status: {
      scaler: { batchSize: 16, requestThresholdPercent: 50, maxIPCount: 250 },
      networkContainers: [
        {
          id: 'nc',
          assignmentMode: 'dynamic',
          ipAssignments: ids.map((name) => ({ name, ip: name })),
        },
      ],
    },
  });
  const start = performance.now();
  for (let i = 0; i < events; i += 1) {
    demand$.next(i % 200);
    if (i % 100 === 99) await new Promise((r) => setImmediate(r));
  }
  await monitor.stop();
  const ms = performance.now() - start;
  return { perSecond: (events / ms) * 1000, reconciles, writes };
}

const decisions = benchDecisions(2_000_000);
console.log(`monitor.decisions_per_second ${Math.round(decisions)}`);
const pipeline = await benchPipeline(200_000);
console.log(`monitor.pipeline_events_per_second ${Math.round(pipeline.perSecond)}`);
console.log(`monitor.pipeline_reconciles ${pipeline.reconciles} (for 200000 demand events)`);
console.log(`monitor.pipeline_writes ${pipeline.writes}`);
