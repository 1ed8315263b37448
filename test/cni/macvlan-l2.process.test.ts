// The L2 recipe (README "On any cluster", docs/decisions/0037): the
// reference macvlan plugin (Debian's containernetworking-plugins 1.1.1, CNI
// up to 1.0.0) in bridge mode with pool-monitor-cni as its IPAM, the
// example manifests/examples/cni/macvlan.conflist as written but for its
// version and where this test's sidecars listen. Two nodes, each a network
// namespace with its own `bin/pool-monitor sidecar` (unix socket + token)
// against the local API server, their uplinks (eth0) on one Linux bridge in
// a namespace of its own standing for the switch; each node's side a macvlan
// (pm0) on its uplink carrying its NNC's primaryIP. Pods on different nodes
// ping each other, each node pings its own pods and each pod its node, and
// no route is there but the kernel's connected ones (and the pods' default
// route of the IPAM result): nothing routes a pod address. IPv4 (dual-stack
// follows the plugin); ipvlan L2 would be the same, but this kernel has no
// ipvlan. Root only, with /usr/lib/cni/macvlan; otherwise one line says why.
import { expect } from 'chai';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  ipOf,
  killStraySidecars,
  startCluster,
  tempDir,
  type Cluster,
} from '../sidecar/harness.ts';
import { overSocket, socketReady, spawnSocketSidecar } from '../support/socket-sidecar.ts';
import { CNI_DIR } from '../../harness/kubelet/netns-cni.ts';
import { inNs, Netns, runPlugin, sh, whyNotReal } from './netns.ts';

const TOKEN = 'macvlan-l2-node-api-token';
const EXAMPLE = new URL('../../manifests/examples/cni/macvlan.conflist', import.meta.url);

interface Node {
  key: string;
  sock: string;
  ns: string;
  primaryIP: string;
  conf: string;
}

describe('the L2 recipe: macvlan with pool-monitor-cni, nodes on one segment, no routes (process)', function () {
  this.timeout(120_000);
  let c: Cluster | undefined;
  let dir: ReturnType<typeof tempDir> | undefined;
  let net: Netns | undefined;
  const nodes: Node[] = [];
  const pods = new Map<string, { node: Node; ns: string; ip: string }>();

  const env = (cmd: string, pod: string, netns: string) => ({
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: `ctr-${pod}`,
    CNI_IFNAME: 'eth0',
    CNI_NETNS: `/var/run/netns/${netns}`,
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=ctr-${pod}`,
  });
  const ping = (ns: string, ip: string) => inNs(ns, ['ping', '-c', '1', '-W', '3', ip]);
  /** Every route of a namespace, one per line. */
  const routes = (ns: string) =>
    inNs(ns, ['ip', '-4', 'route', 'show', 'table', 'all'])
      .split('\n')
      .filter((l) => l !== '' && !/^(local|broadcast|multicast) /.test(l));

  before(async function () {
    const why =
      whyNotReal() ?? (existsSync(`${CNI_DIR}/macvlan`) ? undefined : `no ${CNI_DIR}/macvlan`);
    if (why) {
      console.log(`    skipped: the L2 recipe's test needs root and the reference plugins: ${why}`);
      this.skip();
    }
    c = await startCluster();
    dir = tempDir('cni-l2-');
    net = new Netns('pl');
    const tokenFile = join(dir.path, 'node-api-token');
    writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
    // The switch: a bridge in a namespace of its own.
    const sw = net.add('sw');
    inNs(sw, ['ip', 'link', 'add', 'sw0', 'type', 'bridge']);
    inNs(sw, ['ip', 'link', 'set', 'sw0', 'up']);
    const list = JSON.parse(readFileSync(EXAMPLE, 'utf8')) as {
      name: string;
      plugins: Record<string, unknown>[];
    };
    for (const [i, key] of ['a', 'b'].entries()) {
      const name = `${net.id}-node-${key}`;
      const numbers = Array.from({ length: 10 }, (_, j) => i * 20 + j);
      // The NNC's primaryIP: the node's own address in the pod subnet.
      const primaryIP = `10.10.200.${i + 1}`;
      await createNnc(
        c,
        name,
        { requestedIPCount: 10 },
        { scaler: DEFAULT_SCALER, networkContainers: [{ ...container(numbers), primaryIP }] },
      );
      for (const p of [1, 2]) await createPod(c, `${key}${p}`, name);
      const { sidecar, sock } = await spawnSocketSidecar(c, {
        node: name,
        dir: dir.path,
        name: key,
        tokenFile,
      });
      await socketReady({ sidecar, sock }, name, TOKEN);
      const ns = net.add(`n${key}`);
      // The uplink, a port of the switch; the node's side, a macvlan on it.
      sh('ip', [
        'link',
        'add',
        'eth0',
        'netns',
        ns,
        'type',
        'veth',
        'peer',
        'name',
        `p${key}`,
        'netns',
        sw,
      ]);
      inNs(sw, ['ip', 'link', 'set', `p${key}`, 'master', 'sw0', 'up']);
      inNs(ns, ['ip', 'link', 'set', 'eth0', 'up']);
      inNs(ns, ['ip', 'link', 'add', 'pm0', 'link', 'eth0', 'type', 'macvlan', 'mode', 'bridge']);
      inNs(ns, ['ip', 'addr', 'add', `${primaryIP}/16`, 'dev', 'pm0']);
      inNs(ns, ['ip', 'link', 'set', 'pm0', 'up']);
      // The example as written; Debian's 1.1.1 plugins speak 1.0.0 (examples' README).
      const entry = list.plugins[0]!;
      const conf = {
        ...entry,
        cniVersion: '1.0.0',
        name: list.name,
        ipam: { ...(entry.ipam as object), nodeAPI: `unix:${sock}`, tokenFile },
      };
      nodes.push({ key, sock, ns, primaryIP, conf: JSON.stringify(conf) });
    }
    for (const node of nodes)
      for (const p of [1, 2]) {
        const pod = `${node.key}${p}`;
        const ns = net.add(pod);
        const run = await runPlugin(node.ns, 'macvlan', env('ADD', pod, ns), node.conf);
        expect(run.code, run.out).to.equal(0);
        const ip = (run.json!.ips as { address: string }[])[0]!.address.split('/')[0]!;
        pods.set(pod, { node, ns, ip });
      }
  });

  after(async () => {
    killStraySidecars();
    const failed = net?.cleanup() ?? [];
    const left = net?.leftovers() ?? [];
    dir?.remove();
    await c?.close();
    expect(failed, 'namespaces that would not go').to.deep.equal([]);
    expect(left, 'namespaces left behind').to.deep.equal([]);
  });

  it("gives each pod an address of its node's NNC on a macvlan of the uplink, with the subnet's prefix", () => {
    for (const [name, pod] of pods) {
      const own = Array.from(
        { length: 10 },
        (_, j) => ipOf((pod.node.key === 'a' ? 0 : 20) + j).ip,
      );
      expect(own, name).to.include(pod.ip);
      expect(inNs(pod.ns, ['ip', '-d', '-4', 'addr', 'show', 'eth0'])).to.match(
        new RegExp(`macvlan mode bridge[\\s\\S]*inet ${pod.ip.replace(/\./g, '\\.')}/16`),
      );
    }
  });

  it('pods on different nodes ping each other; each node pings its own pods, each pod its node', () => {
    const ip = (p: string) => pods.get(p)!.ip;
    for (const [from, to] of [
      ['a1', 'b1'],
      ['b2', 'a2'],
      ['a1', 'a2'],
      ['b1', 'b2'],
    ] as const)
      expect(ping(pods.get(from)!.ns, ip(to)), `${from} -> ${to}`).to.match(/1 received/);
    for (const pod of pods.values()) {
      expect(ping(pod.node.ns, pod.ip), `node ${pod.node.key} -> ${pod.ip}`).to.match(/1 received/);
      expect(ping(pod.ns, pod.node.primaryIP), `${pod.ip} -> its node`).to.match(/1 received/);
    }
  });

  it('with no route but the connected ones: nothing routes a pod address', () => {
    for (const node of nodes)
      expect(routes(node.ns), node.ns).to.deep.equal([
        `10.10.0.0/16 dev pm0 proto kernel scope link src ${node.primaryIP} `,
      ]);
    for (const pod of pods.values())
      expect(routes(pod.ns).sort(), pod.ns).to.deep.equal([
        `10.10.0.0/16 dev eth0 proto kernel scope link src ${pod.ip} `,
        // The IPAM result's default route, to the subnet's gateway (the segment's router).
        'default via 10.10.0.1 dev eth0 ',
      ]);
  });

  it('DEL takes the pod off the segment and releases its address', async () => {
    const b2 = pods.get('b2')!;
    const run = await runPlugin(b2.node.ns, 'macvlan', env('DEL', 'b2', b2.ns), b2.node.conf);
    expect(run.code, run.out).to.equal(0);
    // ping exits 1: no answer.
    expect(() => ping(pods.get('a1')!.ns, b2.ip)).to.throw(/Command failed: ip netns exec .* ping/);
    const res = await overSocket(b2.node.sock, TOKEN, 'POST', '/debug/ipaddresses', {});
    const list = res.json.IPConfigurationStatus as { IPAddress: string; State: string }[];
    expect(list.find((r) => r.IPAddress === b2.ip)?.State).to.equal('Available');
  });
});
