// Azure backend benchmark (backend level): N VMs with NICs in the ARM
// emulator, each node filled to R IPs by AzureBackend.apply through the real
// SDK, W nodes in parallel (as the fulfiller's workers), every ARM call
// through one token bucket. Prints the time to converge, ARM calls per node
// by operation, and the time the token bucket alone implies for the calls
// made: (calls − burst) / qps. `node bench/azure.ts [nodes] [ips]`;
// AZURE_QPS, AZURE_BURST, WORKERS override 4, 20, 8.
import { TokenBucket } from '../src/azure/arm/token-bucket.ts';
import { createArmClient } from '../src/azure/arm/client.ts';
import { parseSubnetId } from '../src/azure/arm/ids.ts';
import { AzureBackend } from '../src/azure/backend.ts';
import { ArmEmulator } from '../src/azure/emulator/server.ts';
import { sdkNicApi } from '../src/azure/nic-api.ts';

const nodes = Number(process.argv[2] ?? 1000);
const ips = Number(process.argv[3] ?? 30);
const qps = Number(process.env.AZURE_QPS ?? 4);
const burst = Number(process.env.AZURE_BURST ?? 20);
const workers = Number(process.env.WORKERS ?? 8);
const SUB = '00000000-0000-0000-0000-00000000b0b0';

const em = new ArmEmulator({ subscriptionId: SUB, tokens: ['bench'] });
const ids = em.network.addVirtualNetwork('rg', 'vnet', {
  nodes: '10.224.0.0/16',
  pods: '10.240.0.0/12',
});
const vms = Array.from({ length: nodes }, (_, i) =>
  em.network.addVm({ resourceGroup: 'rg', name: `node-${i}`, subnetId: ids.nodes! }),
);
await em.listen();
const client = createArmClient({
  endpoint: em.endpoint,
  subscriptionId: SUB,
  tokens: { token: async () => 'bench', invalidate: () => {}, description: 'bench' },
  bucket: new TokenBucket({ qps, burst }),
});
const backend = new AzureBackend({
  api: sdkNicApi(client, 'rg', parseSubnetId(ids.pods!)),
  podSubnetId: ids.pods!,
});

const t0 = performance.now();
let next = 0;
let converged = 0;
await Promise.all(
  Array.from({ length: workers }, async () => {
    while (next < nodes) {
      const i = next++;
      const r = await backend.apply(
        { name: `node-${i}`, providerID: vms[i]!.providerID },
        { add: ips, remove: [] },
      );
      if (r.held.ipAssignments.length === ips) converged++;
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;
await em.close();

const byOperation: Record<string, number> = {};
for (const r of em.requests) byOperation[r.operation] = (byOperation[r.operation] ?? 0) + 1;
const calls = em.requests.length;
const boundSeconds = Math.max(0, calls - burst) / qps;
console.log(
  JSON.stringify({
    bench: 'azure-backend',
    nodes,
    ipsPerNode: ips,
    qps,
    burst,
    workers,
    converged,
    seconds: Number(seconds.toFixed(1)),
    armCalls: calls,
    armCallsPerNode: Number((calls / nodes).toFixed(2)),
    putsPerNode: Number(
      ((byOperation['NetworkInterfaces.CreateOrUpdate'] ?? 0) / nodes).toFixed(2),
    ),
    byOperation,
    tokenBucketBoundSeconds: Number(boundSeconds.toFixed(1)),
    addressesTaken: em.network.counts.taken,
  }),
);
