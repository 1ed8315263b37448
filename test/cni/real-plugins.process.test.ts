// The real reference plugins (Debian's containernetworking-plugins 1.1.1:
// bridge and ptp, CNI up to 1.0.0) delegating IPAM to bin/pool-monitor-cni,
// in real network namespaces, dual-stack and IPv6-only (IPv4 alone is the
// dual run less a family): two simulated nodes, each its own namespace and
// its own `bin/pool-monitor sidecar` process (unix socket + token) against
// the local API server, a veth between the nodes and per-node host routes
// built from each node's NNC (and, for the bridge's on-link IPv6 subnet,
// proxy NDP for the other node's addresses, as proxy ARP does for IPv4).
// Pods get one address of each family from their node's NNC, ping each
// other in each family on a node and across nodes (once the kernel's
// duplicate address detection let their IPv6 addresses go: the plugins
// return before); DEL releases both; GC reclaims what the runtime forgot
// (and nothing without a list), GC and STATUS with the stdin libcni builds
// at 1.1.0; a stopped sidecar fails STATUS and ADD clearly. Root only, with
// /usr/lib/cni/bridge; otherwise one line says why.
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createNnc,
  createPod,
  DEFAULT_SCALER,
  startCluster,
  tempDir,
  type Cluster,
  type SidecarProcess,
} from '../sidecar/harness.ts';
import {
  overSocket as overSocketAs,
  socketReady,
  spawnSocketSidecar,
} from '../support/socket-sidecar.ts';
import {
  inNs,
  libcniConf,
  Netns,
  PLUGIN_DIR,
  runPlugin,
  tearDownRealParts,
  whyNotReal,
  type CniRun,
} from './netns.ts';
import {
  addressesOf,
  containers,
  dadDone,
  FAMILY_RUNS,
  ping,
  resultIps,
  V6_GATEWAY,
  type Families,
} from './families.ts';

const TOKEN = 'real-plugins-node-api-token';
const NETWORK = 'pmnet';

const overSocket = (sock: string, method: string, path: string, body?: unknown) =>
  overSocketAs(sock, TOKEN, method, path, body);

interface Node {
  name: string;
  ns: string;
  sock: string;
  sidecar: SidecarProcess;
  /** The node's NNC addresses, both families. */
  ips: string[];
  conf: string;
}

async function stateOf(
  node: Node,
  ip: string,
): Promise<{ State: string; PodInfo: { PodName: string } | null } | undefined> {
  const res = await overSocket(node.sock, 'POST', '/debug/ipaddresses', {});
  const list = res.json.IPConfigurationStatus as {
    IPAddress: string;
    State: string;
    PodInfo: { PodName: string } | null;
  }[];
  return list.find((r) => r.IPAddress === ip);
}

for (const families of FAMILY_RUNS)
  describe(`pool-monitor-cni with the reference bridge and ptp plugins in real namespaces, ${families === 'dual' ? 'dual-stack' : 'IPv6-only'} (process)`, function () {
    this.timeout(120_000);
    realPlugins(families);
  });

/** The suite's hooks and tests, for one run of `families`. */
function realPlugins(families: Families): void {
  let c: Cluster | undefined;
  let dir: ReturnType<typeof tempDir> | undefined;
  let net: Netns | undefined;
  const nodes: Record<'a' | 'b', Node> = {} as Record<'a' | 'b', Node>;
  const pods = new Map<
    string,
    { node: Node; ns: string; ips: string[]; result: Record<string, unknown> }
  >();

  const env = (cmd: string, pod: string, netns?: string): Record<string, string> => ({
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: `ctr-${pod}`,
    CNI_IFNAME: 'eth0',
    ...(netns ? { CNI_NETNS: `/var/run/netns/${netns}` } : {}),
    // bridge 1.1.1 refuses unknown args unless told to ignore them.
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=ctr-${pod}`,
  });
  const plugin = (node: Node): string => (node.name.endsWith('a') ? 'bridge' : 'ptp');

  async function addPod(node: Node, pod: string): Promise<CniRun> {
    const ns = net!.add(pod);
    const run = await runPlugin(node.ns, plugin(node), env('ADD', pod, ns), node.conf);
    if (run.code === 0) pods.set(pod, { node, ns, ips: resultIps(run.json), result: run.json! });
    return run;
  }

  before(async function () {
    const why = whyNotReal();
    if (why) {
      console.log(
        `    skipped: the real-plugin CNI test needs root and the reference plugins: ${why}`,
      );
      this.skip();
    }
    c = await startCluster();
    dir = tempDir('cni-real-');
    net = new Netns('pm');
    const tokenFile = join(dir.path, 'node-api-token');
    writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
    for (const [key, first] of [
      ['a', 0],
      ['b', 20],
    ] as const) {
      const name = `${net.id}-node-${key}`;
      const numbers = Array.from({ length: 10 }, (_, i) => first + i);
      await createNnc(
        c,
        name,
        { requestedIPCount: 10 },
        { scaler: DEFAULT_SCALER, networkContainers: containers(families, numbers) },
      );
      for (let i = 1; i <= 4; i++) await createPod(c, `${key}${i}`, name);
      const { sidecar, sock } = await spawnSocketSidecar(c, {
        node: name,
        dir: dir.path,
        name: key,
        tokenFile,
      });
      const type = key === 'a' ? '"bridge","bridge":"cni0","isGateway":true' : '"ptp"';
      nodes[key] = {
        name,
        ns: net.addNode(`n${key}`),
        sock,
        sidecar,
        ips: numbers.flatMap((n) => addressesOf(families, n)),
        conf: `{"cniVersion":"1.0.0","name":"${NETWORK}","type":${type},"ipam":{"type":"pool-monitor-cni","nodeAPI":"unix:${sock}","tokenFile":"${tokenFile}"}}`,
      };
    }
    // The nodes' link, and each node's routes to the other's NNC addresses.
    net.link(nodes.a.ns, '169.254.77.1', nodes.b.ns, '169.254.77.2', ['fd00:77::1', 'fd00:77::2']);
    const via = (ip: string, v4: string, v6: string) => (ip.includes(':') ? v6 : v4);
    for (const ip of nodes.b.ips)
      net.routes(nodes.a.ns, [ip], via(ip, '169.254.77.2', 'fd00:77::2'));
    for (const ip of nodes.a.ips)
      net.routes(nodes.b.ns, [ip], via(ip, '169.254.77.1', 'fd00:77::1'));
    for (const node of Object.values(nodes)) await socketReady(node, node.name, TOKEN);
  });

  after(() => tearDownRealParts({ net, dir, c }));

  it("gives each pod an address from its node's NNC, through bridge on one node and ptp on the other", async () => {
    for (const key of ['a', 'b'] as const) {
      for (const i of [1, 2, 3]) {
        const run = await addPod(nodes[key], `${key}${i}`);
        expect(run.code, run.out).to.equal(0);
      }
    }
    for (const [name, pod] of pods) {
      expect(pod.ips, name).to.have.length(families === 'dual' ? 2 : 1);
      const eth0 = inNs(pod.ns, ['ip', 'addr', 'show', 'eth0']);
      for (const ip of pod.ips) {
        expect(pod.node.ips, name).to.include(ip);
        expect(await stateOf(pod.node, ip)).to.deep.include({
          State: 'Assigned',
          PodInfo: {
            PodName: name,
            PodNamespace: 'default',
            PodInfraContainerID: `ctr-${name}`,
            PodInterfaceID: `cni/${NETWORK}/ctr-${name}/eth0`,
          },
        });
        expect(eth0, name).to.contain(ip.includes(':') ? `${ip}/112` : `${ip}/16`);
      }
      const gateways = (pod.result.ips as { gateway: string }[]).map((e) => e.gateway);
      expect(gateways).to.deep.equal(
        families === 'dual' ? ['10.10.0.1', V6_GATEWAY] : [V6_GATEWAY],
      );
    }
    expect(new Set([...pods.values()].flatMap((p) => p.ips)).size).to.equal(
      families === 'dual' ? 12 : 6,
    );
  });

  it('pods ping each other in each family on a node and across the nodes', async () => {
    // The bridge's pods find node b's pods of their on-link IPv6 subnet through node a.
    net!.proxyNdp(
      nodes.a.ns,
      'cni0',
      nodes.b.ips.filter((ip) => ip.includes(':')),
    );
    // Before any ping: every IPv6 address out of duplicate address detection.
    await dadDone(nodes.a.ns, 'cni0');
    for (const pod of pods.values()) await dadDone(pod.ns);
    for (const [from, to] of [
      ['a1', 'a2'],
      ['b1', 'b2'],
      ['a1', 'b1'],
      ['b3', 'a3'],
      ['a2', 'b3'],
    ] as const)
      for (const ip of pods.get(to)!.ips)
        expect(ping(pods.get(from)!.ns, ip), `${from} -> ${to} ${ip}`).to.match(/1 received/);
  });

  it('CHECK through the bridge plugin agrees with the sidecar', async () => {
    const a1 = pods.get('a1')!;
    const conf = { ...(JSON.parse(nodes.a.conf) as object), prevResult: a1.result };
    const run = await runPlugin(
      nodes.a.ns,
      'bridge',
      env('CHECK', 'a1', a1.ns),
      JSON.stringify(conf),
    );
    expect(run.code, run.out).to.equal(0);
  });

  it('DEL releases the address (Available again), and is idempotent without netns or args', async () => {
    for (const key of ['a', 'b'] as const) {
      const pod = pods.get(`${key}3`)!;
      const run = await runPlugin(
        pod.node.ns,
        plugin(pod.node),
        env('DEL', `${key}3`, pod.ns),
        pod.node.conf,
      );
      expect(run.code, run.out).to.equal(0);
      for (const ip of pod.ips)
        expect(await stateOf(pod.node, ip), ip).to.deep.include({
          State: 'Available',
          PodInfo: null,
        });
      const again = await runPlugin(
        pod.node.ns,
        plugin(pod.node),
        { CNI_COMMAND: 'DEL', CNI_CONTAINERID: `ctr-${key}3`, CNI_IFNAME: 'eth0' },
        pod.node.conf,
      );
      expect(again.code, again.out).to.equal(0);
    }
  });

  // GC and STATUS as libcni sends them for a 1.1.0 list holding the node's
  // entry. Debian's bridge and ptp (1.1.1) speak CNI up to 1.0.0, so the
  // runtime's 1.1.0 calls go to pool-monitor-cni as a 1.1.0 main plugin
  // hands them to its IPAM: the same stdin, unchanged.
  const list = { name: NETWORK, cniVersion: '1.1.0' };

  it('GC releases an attachment the runtime forgot, and keeps the ones it lists; without a list, nothing', async () => {
    const b2 = pods.get('b2')!;
    net!.forget(b2.ns); // the runtime lost the sandbox without a DEL
    const entry = JSON.parse(nodes.b.conf) as object;
    // libcni's GCNetworkList with nil args: no list, so nothing is released.
    const none = await runPlugin(
      nodes.b.ns,
      join(PLUGIN_DIR, 'pool-monitor-cni'),
      { CNI_COMMAND: 'GC' },
      libcniConf(list, entry),
    );
    expect(none.code, none.out).to.equal(0);
    for (const pod of ['b1', 'b2'])
      for (const ip of pods.get(pod)!.ips)
        expect(await stateOf(nodes.b, ip), pod).to.deep.include({ State: 'Assigned' });
    const run = await runPlugin(
      nodes.b.ns,
      join(PLUGIN_DIR, 'pool-monitor-cni'),
      { CNI_COMMAND: 'GC' },
      libcniConf(list, entry, [{ containerID: 'ctr-b1', ifname: 'eth0' }]),
    );
    expect(run.code, run.out).to.equal(0);
    for (const ip of b2.ips)
      expect(await stateOf(nodes.b, ip), ip).to.deep.include({ State: 'Available' });
    for (const ip of pods.get('b1')!.ips)
      expect(await stateOf(nodes.b, ip), ip).to.deep.include({ State: 'Assigned' });
  });

  it('a stopped sidecar makes STATUS fail and ADD fail clearly', async () => {
    const status = libcniConf(list, JSON.parse(nodes.a.conf) as object);
    const up = await runPlugin(
      nodes.a.ns,
      join(PLUGIN_DIR, 'pool-monitor-cni'),
      { CNI_COMMAND: 'STATUS' },
      status,
    );
    expect(up.code, up.out).to.equal(0);
    nodes.a.sidecar.child.kill('SIGTERM');
    expect((await nodes.a.sidecar.exited).code).to.equal(0);
    const down = await runPlugin(
      nodes.a.ns,
      join(PLUGIN_DIR, 'pool-monitor-cni'),
      { CNI_COMMAND: 'STATUS' },
      status,
    );
    expect(down.code).to.not.equal(0);
    expect(down.json).to.include({ code: 50 });
    const add = await addPod(nodes.a, 'a4');
    expect(add.code).to.not.equal(0);
    expect(String(add.json?.msg)).to.match(/cannot reach the node's pool-monitor sidecar/);
  });
}
