// Benchmark of the durable node IP store on a real file (tmp dir): CNI-style
// assign+release pairs per second and PendingRelease marking throughput, with
// synchronous=FULL (the default: one fsync per commit) and NORMAL for
// comparison. Run: node --disable-warning=ExperimentalWarning bench/ipstore.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Synchronous } from '../src/ipstore/database.ts';
import { openIpStore } from '../src/ipstore/sqlite-store.ts';
import type { SqliteIpStore } from '../src/ipstore/sqlite-store.ts';
import type { NetworkContainer } from '../src/nnc/types.ts';

const POOL = 250;
const SECONDS = Number(process.env.BENCH_SECONDS ?? '1.5');

function inventory(): NetworkContainer[] {
  return [
    {
      id: 'nc-bench',
      assignmentMode: 'dynamic',
      primaryIP: '10.0.0.1',
      subnetAddressSpace: '10.0.0.0/16',
      defaultGateway: '10.0.0.254',
      ipAssignments: Array.from({ length: POOL }, (_, i) => ({
        name: `ip-${i}`,
        ip: `10.0.${Math.floor((i + 2) / 256)}.${(i + 2) % 256}`,
      })),
    },
  ];
}

/** Runs `op` repeatedly for about SECONDS; returns operations per second. */
function rate(op: (i: number) => void): number {
  const end = performance.now() + SECONDS * 1000;
  const start = performance.now();
  let n = 0;
  while (performance.now() < end) op(n++);
  return n / ((performance.now() - start) / 1000);
}

function fmt(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1);
}

function bench(synchronous: Synchronous): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'ipstore-bench-'));
  let store: SqliteIpStore | undefined;
  try {
    store = openIpStore({ stateDir: dir, synchronous });
    const s = store;
    let t = performance.now();
    s.syncInventory(inventory());
    const syncMs = performance.now() - t;
    // half the pool busy, like a loaded node
    for (let p = 0; p < POOL / 2; p++) {
      s.assign({
        podInterfaceID: `busy-${p}`,
        infraContainerID: 'i',
        podName: `busy-${p}`,
        podNamespace: 'b',
      });
    }
    const pairs = rate((i) => {
      const pod = {
        podInterfaceID: `pod-${i}`,
        infraContainerID: 'i',
        podName: `pod-${i}`,
        podNamespace: 'b',
      };
      s.assign(pod);
      s.release(pod.podInterfaceID);
    });
    const marks = rate((i) => {
      if (i % 100 === 99) s.restorePendingRelease([]);
      else s.markPendingRelease(1);
    });
    s.restorePendingRelease([]);
    t = performance.now();
    const batch = s.markPendingRelease(POOL / 2);
    const batchMs = performance.now() - t;
    return {
      synchronous,
      'assign+release pairs/s': fmt(pairs),
      'mark(1) tx/s': fmt(marks),
      [`mark(${batch.length}) ms`]: batchMs.toFixed(2),
      [`sync ${POOL} IPs ms`]: syncMs.toFixed(2),
    };
  } finally {
    store?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows = (['FULL', 'NORMAL'] as const).map(bench);
console.log(`ipstore bench (file store, ${POOL} IPs, half assigned, ${SECONDS}s per figure)`);
console.table(rows);
console.log(JSON.stringify({ bench: 'ipstore', results: rows }));
