// The L2 recipe (README "On any cluster", docs/decisions/0037): the
// reference macvlan plugin (Debian's containernetworking-plugins 1.1.1, CNI
// up to 1.0.0) in bridge mode with pool-monitor-cni as its IPAM, the
// example manifests/examples/cni/macvlan.conflist as written but for its
// version and where this test's sidecars listen. Two nodes, each a network
// namespace with its own `bin/pool-monitor sidecar` (unix socket + token)
// against the local API server, their uplinks (eth0) on one Linux bridge in
// a namespace of its own standing for the switch; each node's side a macvlan
// (pm0) on its uplink carrying its NNC's primaryIP of each family. Run
// dual-stack and IPv6-only (IPv4 alone is the dual run less a family): each
// pod's eth0 holds one address of each family, pods on different nodes ping
// each other in each family (ping -4, ping -6), each node pings its own pods
// and each pod its node, and no route is there but the kernel's connected
// ones (and the pods' default routes of the IPAM result): nothing routes a
// pod address. IPv6 duplicate address detection: the plugin returns while a
// pod's address is still tentative, so the pings wait for it to settle (and
// a duplicate fails the test); the nodes' own IPv6 addresses go on pm0 with
// nodad, as the recipe's node side is ours to make. ipvlan L2 would be the
// same, but this kernel has no ipvlan. Root only, with /usr/lib/cni/macvlan;
// otherwise one line says why.
import { expect } from 'chai';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  createNnc,
  createPod,
  DEFAULT_SCALER,
  startCluster,
  tempDir,
  type Cluster,
} from '../sidecar/harness.ts';
import { overSocket, socketReady, spawnSocketSidecar } from '../support/socket-sidecar.ts';
import { CNI_DIR } from '../../harness/kubelet/netns-cni.ts';
import { inNs, Netns, runPlugin, sh, tearDownRealParts, whyNotReal } from './netns.ts';
import {
  addressesOf,
  containers,
  dadDone,
  FAMILY_RUNS,
  ping,
  resultIps,
  V6_GATEWAY,
} from './families.ts';

const TOKEN = 'macvlan-l2-node-api-token';
const EXAMPLE = new URL('../../manifests/examples/cni/macvlan.conflist', import.meta.url);

interface Node {
  key: string;
  sock: string;
  ns: string;
  /** The node's own addresses on the segment (its NNC's primaryIPs), IPv4 first. */
  primaryIPs: string[];
  conf: string;
}

for (const families of FAMILY_RUNS)
  describe(`the L2 recipe: macvlan with pool-monitor-cni, nodes on one segment, no routes, ${families === 'dual' ? 'dual-stack' : 'IPv6-only'} (process)`, function () {
    this.timeout(120_000);
    let c: Cluster | undefined;
    let dir: ReturnType<typeof tempDir> | undefined;
    let net: Netns | undefined;
    const nodes: Node[] = [];
    const pods = new Map<string, { node: Node; ns: string; ips: string[]; result: unknown }>();

    const env = (cmd: string, pod: string, netns: string) => ({
      CNI_COMMAND: cmd,
      CNI_CONTAINERID: `ctr-${pod}`,
      CNI_IFNAME: 'eth0',
      CNI_NETNS: `/var/run/netns/${netns}`,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=ctr-${pod}`,
    });
    /** Every route of a namespace in a family, one per line, but the kernel's local, multicast and link-local ones. */
    const routes = (ns: string, family: '-4' | '-6') =>
      inNs(ns, ['ip', family, 'route', 'show', 'table', 'all'])
        .split('\n')
        .filter((l) => l !== '' && !/^(local|broadcast|multicast|anycast) |^fe80::\/64 /.test(l));

    before(async function () {
      const why =
        whyNotReal() ?? (existsSync(`${CNI_DIR}/macvlan`) ? undefined : `no ${CNI_DIR}/macvlan`);
      if (why) {
        console.log(
          `    skipped: the L2 recipe's test needs root and the reference plugins: ${why}`,
        );
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
        // The NNC's primaryIPs: the node's own addresses in the pod subnets.
        const primary = { v4: `10.10.200.${i + 1}`, v6: `fd00:10::ff0${i + 1}` };
        const networkContainers = containers(families, numbers, primary);
        const primaryIPs = networkContainers.map((nc) => nc.primaryIP!);
        await createNnc(
          c,
          name,
          { requestedIPCount: 10 },
          { scaler: DEFAULT_SCALER, networkContainers },
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
        for (const ip of primaryIPs)
          inNs(ns, [
            'ip',
            'addr',
            'add',
            ...(ip.includes(':') ? [`${ip}/112`, 'nodad'] : [`${ip}/16`]),
            'dev',
            'pm0',
          ]);
        inNs(ns, ['ip', 'link', 'set', 'pm0', 'up']);
        // The example as written; Debian's 1.1.1 plugins speak 1.0.0 (examples' README).
        const entry = list.plugins[0]!;
        const conf = {
          ...entry,
          cniVersion: '1.0.0',
          name: list.name,
          ipam: { ...(entry.ipam as object), nodeAPI: `unix:${sock}`, tokenFile },
        };
        nodes.push({ key, sock, ns, primaryIPs, conf: JSON.stringify(conf) });
      }
      for (const node of nodes)
        for (const p of [1, 2]) {
          const pod = `${node.key}${p}`;
          const ns = net.add(pod);
          const run = await runPlugin(node.ns, 'macvlan', env('ADD', pod, ns), node.conf);
          expect(run.code, run.out).to.equal(0);
          pods.set(pod, { node, ns, ips: resultIps(run.json), result: run.json });
        }
      // Before any ping: each pod's IPv6 address out of duplicate address detection.
      for (const pod of pods.values()) await dadDone(pod.ns);
    });

    after(() => tearDownRealParts({ net, dir, c }));

    it("gives each pod an address of each family of its node's NNC on a macvlan of the uplink, with each subnet's prefix and gateway", () => {
      for (const [name, pod] of pods) {
        const own = Array.from({ length: 10 }, (_, j) =>
          addressesOf(families, (pod.node.key === 'a' ? 0 : 20) + j).join(' '),
        );
        expect(own, name).to.include(pod.ips.join(' '));
        expect(pod.ips, name).to.have.length(families === 'dual' ? 2 : 1);
        const eth0 = inNs(pod.ns, ['ip', '-d', 'addr', 'show', 'eth0']);
        expect(eth0).to.match(/macvlan mode bridge/);
        for (const ip of pod.ips)
          expect(eth0, name).to.include(
            ip.includes(':') ? `inet6 ${ip}/112 scope global` : `inet ${ip}/16 `,
          );
        const gateways = (pod.result as { ips: { gateway: string }[] }).ips.map((e) => e.gateway);
        expect(gateways).to.deep.equal(
          families === 'dual' ? ['10.10.0.1', V6_GATEWAY] : [V6_GATEWAY],
        );
      }
    });

    it('pods on different nodes ping each other in each family; each node pings its own pods, each pod its node', () => {
      const ips = (p: string) => pods.get(p)!.ips;
      for (const [from, to] of [
        ['a1', 'b1'],
        ['b2', 'a2'],
        ['a1', 'a2'],
        ['b1', 'b2'],
      ] as const)
        for (const ip of ips(to))
          expect(ping(pods.get(from)!.ns, ip), `${from} -> ${to} ${ip}`).to.match(/1 received/);
      for (const pod of pods.values()) {
        for (const ip of pod.ips)
          expect(ping(pod.node.ns, ip), `node ${pod.node.key} -> ${ip}`).to.match(/1 received/);
        for (const ip of pod.node.primaryIPs)
          expect(ping(pod.ns, ip), `${pod.ips[0]} -> its node ${ip}`).to.match(/1 received/);
      }
    });

    it('with no route but the connected ones: nothing routes a pod address', () => {
      for (const node of nodes) {
        const [v4] = families === 'dual' ? node.primaryIPs : [];
        expect(routes(node.ns, '-4'), node.ns).to.deep.equal(
          v4 ? [`10.10.0.0/16 dev pm0 proto kernel scope link src ${v4} `] : [],
        );
        expect(routes(node.ns, '-6'), node.ns).to.deep.equal([
          'fd00:10::/112 dev pm0 proto kernel metric 256 pref medium',
        ]);
      }
      for (const pod of pods.values()) {
        const [v4] = families === 'dual' ? pod.ips : [];
        expect(routes(pod.ns, '-4').sort(), pod.ns).to.deep.equal(
          v4
            ? [
                `10.10.0.0/16 dev eth0 proto kernel scope link src ${v4} `,
                // The IPAM result's default route, to the subnet's gateway (the segment's router).
                'default via 10.10.0.1 dev eth0 ',
              ]
            : [],
        );
        expect(routes(pod.ns, '-6').sort(), pod.ns).to.deep.equal([
          `default via ${V6_GATEWAY} dev eth0 metric 1024 pref medium`,
          'fd00:10::/112 dev eth0 proto kernel metric 256 pref medium',
        ]);
      }
    });

    it('DEL takes the pod off the segment and releases its address', async () => {
      const b2 = pods.get('b2')!;
      const run = await runPlugin(b2.node.ns, 'macvlan', env('DEL', 'b2', b2.ns), b2.node.conf);
      expect(run.code, run.out).to.equal(0);
      const res = await overSocket(b2.node.sock, TOKEN, 'POST', '/debug/ipaddresses', {});
      const list = res.json.IPConfigurationStatus as { IPAddress: string; State: string }[];
      for (const ip of b2.ips) {
        // ping exits 1: no answer.
        expect(() => ping(pods.get('a1')!.ns, ip)).to.throw(
          /Command failed: ip netns exec .* ping/,
        );
        expect(list.find((r) => r.IPAddress === ip)?.State, ip).to.equal('Available');
      }
    });
  });
