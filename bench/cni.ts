// ADD and DEL through the reference bridge plugin (containernetworking-plugins
// 1.1.1) with pool-monitor-cni as its IPAM, side by side in one run with the
// same chain on host-local (the reference IPAM plugin): bursts of 1, 30 and
// 110 pods on one node, all of a burst's ADDs at once, then all its DELs.
// Each chain has its own node namespace and bridge; pool-monitor-cni asks a
// real `bin/pool-monitor sidecar` over its unix socket with a token. The
// bridge finds pool-monitor-cni as on a node (docs/decisions/0032): the
// static binary itself (dist/pool-monitor-cni, `make cni`) in the plugin
// directory, not the repository's launcher script. Prints
// p50/p99 per burst and the ratio to host-local on the burst of 30 (goal
// <= 1.5x). Root with /usr/lib/cni/bridge only; otherwise one line says why.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  killStraySidecars,
  startCluster,
  tempDir,
} from '../test/sidecar/harness.ts';
import { INSTALLED_DIR, Netns, runPlugin, whyNotReal } from '../test/cni/netns.ts';
import { socketReady, spawnSocketSidecar } from '../test/support/socket-sidecar.ts';

const BURSTS = [1, 30, 110];
const TOKEN = 'bench-cni-node-api-token';

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
};

interface Chain {
  name: string;
  node: string;
  conf: string;
}

async function burst(net: Netns, chain: Chain, n: number, round: number) {
  const pods = Array.from({ length: n }, (_, i) => `p${i}`);
  const nss = pods.map((p) => net.add(`${chain.name[0]}${round}${p}`));
  const env = (cmd: string, pod: string, ns?: string) => ({
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: `ctr-${round}-${pod}`,
    CNI_IFNAME: 'eth0',
    ...(ns ? { CNI_NETNS: `/var/run/netns/${ns}` } : {}),
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`,
  });
  const adds = await Promise.all(
    pods.map((p, i) =>
      runPlugin(chain.node, 'bridge', env('ADD', p, nss[i]), chain.conf, INSTALLED_DIR),
    ),
  );
  const failed = adds.find((r) => r.code !== 0);
  if (failed) throw new Error(`${chain.name} ADD failed: ${failed.out}`);
  const dels = await Promise.all(
    pods.map((p, i) =>
      runPlugin(chain.node, 'bridge', env('DEL', p, nss[i]), chain.conf, INSTALLED_DIR),
    ),
  );
  const delFailed = dels.find((r) => r.code !== 0);
  if (delFailed) throw new Error(`${chain.name} DEL failed: ${delFailed.out}`);
  for (const ns of nss) net.forget(ns);
  return { add: adds.map((r) => r.ms), del: dels.map((r) => r.ms) };
}

async function main(): Promise<void> {
  const why = whyNotReal();
  if (why) {
    console.log(`bench/cni.ts skipped: it needs root and the reference CNI plugins: ${why}`);
    return;
  }
  const c = await startCluster();
  const dir = tempDir('bench-cni-');
  const net = new Netns('bc');
  try {
    const node = `${net.id}-node`;
    await createNnc(
      c,
      node,
      { requestedIPCount: 130 },
      {
        scaler: DEFAULT_SCALER,
        networkContainers: [container(Array.from({ length: 130 }, (_, i) => i))],
      },
    );
    // Demand for the whole pool, so that the sidecar keeps it.
    for (let i = 0; i < 110; i++) await createPod(c, `p${i}`, node);
    const tokenFile = join(dir.path, 'token');
    writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
    const { sock } = await socketReady(
      await spawnSocketSidecar(c, { node, dir: dir.path, name: 'cns', tokenFile }),
      node,
      TOKEN,
    );
    const chains: Chain[] = [
      {
        name: 'pool-monitor-cni',
        node: net.addNode('pm'),
        conf: `{"cniVersion":"1.0.0","name":"pm","type":"bridge","bridge":"cni0","isGateway":true,"ipam":{"type":"pool-monitor-cni","nodeAPI":"unix:${sock}","tokenFile":"${tokenFile}"}}`,
      },
      {
        name: 'host-local',
        node: net.addNode('hl'),
        conf: `{"cniVersion":"1.0.0","name":"hl","type":"bridge","bridge":"cni0","isGateway":true,"ipam":{"type":"host-local","dataDir":"${join(dir.path, 'host-local')}","ranges":[[{"subnet":"10.11.0.0/16"}]],"routes":[{"dst":"0.0.0.0/0"}]}}`,
      },
    ];
    // A first pod through each chain: the bridge and the caches made, not measured.
    for (const chain of chains) await burst(net, chain, 1, 0);
    const rows: string[] = [];
    const p50At30: Record<string, number> = {};
    const p99At30: Record<string, number> = {};
    for (const [round, n] of BURSTS.entries()) {
      for (const chain of chains) {
        const { add, del } = await burst(net, chain, n, round + 1);
        rows.push(
          `${String(n).padStart(5)}  ${chain.name.padEnd(17)} ADD p50 ${pct(add, 50).toFixed(0).padStart(5)} ms  p99 ${pct(add, 99).toFixed(0).padStart(5)} ms   DEL p50 ${pct(del, 50).toFixed(0).padStart(5)} ms  p99 ${pct(del, 99).toFixed(0).padStart(5)} ms`,
        );
        if (n === 30) {
          p50At30[chain.name] = pct(add, 50);
          p99At30[chain.name] = pct(add, 99);
        }
      }
    }
    console.log('burst  chain (bridge +)   per-pod latency, all of a burst at once');
    for (const r of rows) console.log(r);
    const r50 = p50At30['pool-monitor-cni']! / p50At30['host-local']!;
    const r99 = p99At30['pool-monitor-cni']! / p99At30['host-local']!;
    console.log(
      `burst of 30: ADD p50 ${r50.toFixed(2)}x, p99 ${r99.toFixed(2)}x host-local's (goal <= 1.5x)`,
    );
  } finally {
    killStraySidecars();
    net.cleanup();
    dir.remove();
    await c.close();
  }
}

await main();
