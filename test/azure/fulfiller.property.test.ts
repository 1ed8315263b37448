// The fulfiller on its Azure backend as a property, over HTTP (local API
// server, ARM emulator, real SDK): whatever the random sequence of spec
// changes (requests up and down, releases through ipsNotInUse as a sidecar
// writes them) and injected faults (ARM 429/500/503 with and without
// Retry-After, 412, answers lost after the change landed, slow answers; API
// 409/500 on status writes), at every instant sampled
// - no address is on two NNCs (nor on two NICs),
// - every NNC IP the node may use is an ipConfiguration of its own NIC,
// and once the faults stop it converges: every NNC holds what it asks for,
// nothing it gave back, and its NIC holds exactly what its NNC lists.
// AZURE_PROPERTY_RUNS raises the number of runs (default 3, kept lean for
// `make test`).
import { CustomObjectsApi } from '@kubernetes/client-node';
import { expect } from 'chai';
import fc from 'fast-check';
import type { ArmOperation } from '../../src/azure/arm/operations.ts';
import { azureBackendFactory } from '../../src/azure/setup.ts';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { startFulfiller } from '../../src/fulfiller/run.ts';
import type { RunningFulfiller } from '../../src/fulfiller/run.ts';
import { isConflict } from '../../src/kube/errors.ts';
import { silentLogger } from '../../src/log/logger.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { dynamicContainers, NNC_PLURAL } from '../../src/nnc/types.ts';
import type { AzureCluster } from '../support/azure-cluster.ts';
import { leaks, NNC, safetyViolations, startAzureCluster } from '../support/azure-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';

const NODES = ['node-0', 'node-1', 'node-2'] as const;
const RUNS = Number(process.env.AZURE_PROPERTY_RUNS ?? 3);
const PUT: ArmOperation = 'NetworkInterfaces.CreateOrUpdate';

type Node = (typeof NODES)[number];
type Step =
  | { kind: 'request'; node: Node; count: number }
  | { kind: 'release'; node: Node; k: number; count: number }
  | { kind: 'arm'; operation: ArmOperation; status: number; times: number; retryAfter?: number }
  | { kind: 'lost'; times: number }
  | { kind: 'slow'; operation: ArmOperation; delayMs: number; times: number }
  | { kind: 'api'; status: 409 | 500; times: number }
  | { kind: 'wait'; ms: number };

const node = fc.constantFrom(...NODES);
const readOp = fc.constantFrom<ArmOperation>(
  'NetworkInterfaces.Get',
  'AsyncOperation.Get',
  'NetworkInterfaces.List',
  'VirtualNetworks.ListUsage',
);
const times = fc.integer({ min: 1, max: 3 });
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('request' as const),
      node,
      count: fc.integer({ min: 0, max: 40 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      node,
      k: fc.integer({ min: 1, max: 8 }),
      count: fc.integer({ min: 0, max: 40 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.record({
        kind: fc.constant('arm' as const),
        operation: fc.oneof(fc.constant(PUT), readOp),
        status: fc.constantFrom(429, 503),
        times,
        retryAfter: fc.constantFrom(0, 1),
      }),
      fc.record({
        kind: fc.constant('arm' as const),
        operation: fc.oneof(fc.constant(PUT), readOp),
        status: fc.constantFrom(500, 502),
        times,
      }),
      fc.record({
        kind: fc.constant('arm' as const),
        operation: fc.constant(PUT),
        status: fc.constant(412),
        times,
      }),
    ),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('lost' as const), times }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('slow' as const),
      operation: fc.oneof(fc.constant(PUT), readOp),
      delayMs: fc.integer({ min: 20, max: 200 }),
      times,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('api' as const),
      status: fc.constantFrom(409 as const, 500 as const),
      times,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      ms: fc.integer({ min: 0, max: 300 }),
    }),
  },
);

async function run(steps: Step[]): Promise<void> {
  const cluster: AzureCluster = await startAzureCluster({ log: false });
  let fulfiller: RunningFulfiller | undefined;
  const violations: string[] = [];
  const check = (): void => {
    for (const v of safetyViolations(cluster)) if (violations.length < 20) violations.push(v);
  };
  const sampler = setInterval(check, 5);
  try {
    fulfiller = await startFulfiller({
      kc: cluster.kc,
      config: makeFulfillerConfig({
        minIntervalMs: 0,
        resyncMs: 300,
        backoff: { initialMs: 20, maxMs: 300 },
      }),
      logger: silentLogger(),
      defaultMetrics: false,
      backend: azureBackendFactory(cluster.cloud.settings(1000, 1000), {
        tokens: cluster.cloud.tokens(),
        retry: { backoff: { initialMs: 10, maxMs: 100, factor: 2, jitter: 0.2 } },
      }),
    });
    for (const n of NODES) await cluster.addNode(n);
    await waitFor('the NNCs', () => cluster.nncs().length === NODES.length, 10_000);
    const api = cluster.kc.makeApiClient(CustomObjectsApi);
    /** Read-modify-write of a spec, as a sidecar does it (a 409 reads again). */
    const updateSpec = async (
      name: string,
      next: (nnc: NodeNetworkConfig) => Record<string, unknown>,
    ) => {
      for (;;) {
        const cur = (await api.getNamespacedCustomObject({ ...NNC, name })) as NodeNetworkConfig;
        try {
          await api.replaceNamespacedCustomObject({
            ...NNC,
            name,
            body: { ...cur, spec: next(cur) },
          });
          return;
        } catch (err) {
          if (!isConflict(err)) throw err;
        }
      }
    };
    /** ipsNotInUse keeps only ids the status still lists (the sidecar clears the rest). */
    const stillListed = (nnc: NodeNetworkConfig): string[] => {
      const listed = new Set((dynamicContainers(nnc)[0]?.ipAssignments ?? []).map((a) => a.name));
      return ((nnc.spec?.ipsNotInUse as string[] | undefined) ?? []).filter((id) => listed.has(id));
    };
    for (const s of steps) {
      switch (s.kind) {
        case 'request':
          await updateSpec(s.node, (nnc) => ({
            requestedIPCount: s.count,
            ipsNotInUse: stillListed(nnc),
          }));
          break;
        case 'release':
          await updateSpec(s.node, (nnc) => {
            const kept = stillListed(nnc);
            const fresh = (dynamicContainers(nnc)[0]?.ipAssignments ?? [])
              .map((a) => a.name)
              .filter((id) => !kept.includes(id))
              .slice(0, s.k);
            return { requestedIPCount: s.count, ipsNotInUse: [...kept, ...fresh] };
          });
          break;
        case 'arm':
          cluster.cloud.emulator.inject({
            operation: s.operation,
            status: s.status,
            times: s.times,
            ...(s.retryAfter !== undefined ? { retryAfterSeconds: s.retryAfter } : {}),
          });
          break;
        case 'lost':
          cluster.cloud.emulator.inject({
            operation: PUT,
            status: 500,
            landed: true,
            times: s.times,
          });
          break;
        case 'slow':
          cluster.cloud.emulator.inject({
            operation: s.operation,
            delayMs: s.delayMs,
            times: s.times,
          });
          break;
        case 'api':
          cluster.server.faults.inject({
            verb: 'update',
            resource: NNC_PLURAL,
            subresource: 'status',
            status: s.status,
            times: s.times,
          });
          break;
        case 'wait':
          await sleep(s.ms);
          break;
      }
      check();
    }
    // Faults stop. Settled: every node holds at least what it asks for (a pool
    // above its request waits for the node to list its surplus), nothing it
    // gave back, and its NIC exactly what its NNC lists.
    cluster.cloud.emulator.faults.clear();
    cluster.server.faults.clear();
    const settled = (what: string, exact: boolean) =>
      waitFor(
        what,
        () =>
          NODES.every((n) => {
            const nnc = cluster.nncs().find((o) => o.metadata.name === n);
            const held = nnc && dynamicContainers(nnc)[0]?.ipAssignments;
            const requested = (nnc?.spec?.requestedIPCount as number | undefined) ?? 0;
            const notInUse = new Set((nnc?.spec?.ipsNotInUse as string[] | undefined) ?? []);
            return (
              held !== undefined &&
              nnc?.status?.status === 'Updated' &&
              (exact ? held.length === requested : held.length >= requested) &&
              held.every((a) => !notInUse.has(a.name))
            );
          }) && leaks(cluster).length === 0,
        30_000,
      ).catch((err: Error) => {
        const state = cluster.nncs().map((o) => {
          const nc = dynamicContainers(o)[0];
          const notInUse = (o.spec?.ipsNotInUse as string[] | undefined)?.length ?? 0;
          return `${o.metadata.name}: asks ${String(o.spec?.requestedIPCount)} (${notInUse} not in use), holds ${nc?.ipAssignments?.length ?? '-'}, ${o.status?.status ?? 'no status'}`;
        });
        throw new Error(
          `${err.message}; ${state.join('; ')}; leaks: ${leaks(cluster).slice(0, 5).join('; ')}`,
        );
      });
    await settled('settled', false);
    // The nodes list their surplus, as a sidecar does: then each holds exactly its request.
    for (const n of NODES) {
      await updateSpec(n, (nnc) => {
        const requested = (nnc.spec?.requestedIPCount as number | undefined) ?? 0;
        const ids = (dynamicContainers(nnc)[0]?.ipAssignments ?? []).map((a) => a.name);
        return { requestedIPCount: requested, ipsNotInUse: ids.slice(requested) };
      });
    }
    await settled('convergence', true);
    check();
    expect(violations).to.deep.equal([]);
    expect(leaks(cluster)).to.deep.equal([]);
  } finally {
    clearInterval(sampler);
    await fulfiller?.stop();
    await cluster.close();
  }
}

describe('fulfiller --backend azure, property: random specs and faults over HTTP', function () {
  this.timeout(60_000 + RUNS * 40_000);

  it('never puts an address on two NNCs, backs every NNC IP by its NIC, converges', async () => {
    // Each run starts two servers: no shrinking unless asked (AZURE_PROPERTY_SHRINK=1).
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 14 }), run), {
      numRuns: RUNS,
      endOnFailure: process.env.AZURE_PROPERTY_SHRINK !== '1',
      ...(process.env.AZURE_PROPERTY_SEED ? { seed: Number(process.env.AZURE_PROPERTY_SEED) } : {}),
    });
  });
});
