// A dual-stack node, end to end through real I/O: `bin/pool-monitor sidecar`
// (a process, its token bound to its Node, RBAC as the manifests grant it)
// against the local API server with a hand-written NNC whose status holds
// one dynamic network container per family, as the fulfiller will write it
// (docs/design/contracts.md, "Address families"); the simulated kubelet
// asks the node API for each pod's addresses over HTTP and writes them to
// status.podIPs. What a platform team turning dual-stack on expects:
// - every pod gets one address of each family, IPv4 first, each with its
//   family's prefix and gateway, and reports both in status.podIPs;
// - with no IPv6 address left, a request assigns nothing (ReturnCode 32),
//   and the IPv6 subnet's CSS exhausted makes the node exhausted;
// - a release frees both; /debug/ipaddresses lists both families;
//   /debug/pool and /metrics show each family;
// - a scale-down marks the same number of each family in ipsNotInUse;
// - a restart on the same state dir hands out nothing twice.
import { expect } from 'chai';
import { startSimKubelet, type RunningSimKubelet } from '../../harness/kubelet/start.ts';
import { silentLogger } from '../../src/log/logger.ts';
import type { NetworkContainer } from '../../src/nnc/types.ts';
import { parseProm, value } from '../metrics/prom-text.ts';
import {
  createNnc,
  createPod,
  DEFAULT_SCALER,
  deletePod,
  getNnc,
  killStraySidecars,
  setCss,
  setStatus,
  spawnSidecar,
  startCluster,
  tempDir,
  waitFor,
  type Cluster,
  type SidecarProcess,
} from './harness.ts';

const id = (family: 4 | 6, i: number): string =>
  `00000000-0000-4000-${family === 4 ? '8004' : '8006'}-${i.toString(16).padStart(12, '0')}`;

/** The IPv4 container: 10.30.0.0/16, addresses 10.30.1.<i+1>. */
function v4(hosts: number[]): NetworkContainer {
  return {
    id: 'nc-v4',
    assignmentMode: 'dynamic',
    type: 'VNETBlock',
    primaryIP: '10.30.0.4',
    subnetName: 'pods-v4',
    subnetAddressSpace: '10.30.0.0/16',
    defaultGateway: '10.30.0.1',
    version: 1,
    nodeIP: '10.0.0.4',
    ipAssignments: hosts.map((i) => ({ name: id(4, i), ip: `10.30.1.${i + 1}` })),
  };
}

/** The IPv6 container: fd00:30::/112, addresses fd00:30::1:<i>. */
function v6(hosts: number[]): NetworkContainer {
  return {
    id: 'nc-v6',
    assignmentMode: 'dynamic',
    type: 'VNETBlock',
    primaryIP: 'fd00:30::4',
    subnetName: 'pods-v6',
    subnetAddressSpace: 'fd00:30::/112',
    defaultGateway: 'fd00:30::1',
    version: 1,
    nodeIP: '10.0.0.4',
    ipAssignments: hosts.map((i) => ({ name: id(6, i), ip: `fd00:30::1:${i.toString(16)}` })),
  };
}

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

interface PodIpInfo {
  PodIPConfig: { IPAddress: string; PrefixLength: number };
  NetworkContainerPrimaryIPConfig: {
    IPSubnet: { IPAddress: string; PrefixLength: number };
    GatewayIPAddress: string;
  };
}
interface IpConfigs {
  podIPInfo: PodIpInfo[];
  response: { ReturnCode: number; Message: string };
}

async function call<T>(url: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (path === '/metrics' ? await res.text() : await res.json()) as T;
}

const request = (pod: string) => ({
  podInterfaceID: `${pod}-eth0`,
  infraContainerID: `${pod}-sandbox`,
  orchestratorContext: { PodName: pod, PodNamespace: 'default' },
  desiredIPAddresses: [],
});

describe('a dual-stack node: the sidecar process, the local API server, the kubelet', function () {
  this.timeout(60_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  let p: SidecarProcess | undefined;
  let kubelet: RunningSimKubelet | undefined;

  before(async () => {
    c = await startCluster();
  });
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(async () => {
    await kubelet?.stop();
    kubelet = undefined;
    if (p) {
      p.child.kill('SIGTERM');
      expect((await p.exited).code).to.equal(0);
      // Nothing went wrong on the way: no error, no warning but those the test asked for.
      const asked = ['no available ip', 'pod IP adopted'];
      const bad = p.lines.filter(
        (l) => /"level":"(error|warn)"/.test(l) && !asked.some((m) => l.includes(`"msg":"${m}"`)),
      );
      expect(bad).to.deep.equal([]);
      expect(p.stderr()).to.equal('');
      p = undefined;
    }
    dir.remove();
  });
  after(async () => {
    killStraySidecars();
    await c?.close();
  });

  async function start(node: string): Promise<string> {
    const kubeconfig = await c.strict!.kubeconfigFile('sidecar', node);
    p = spawnSidecar(['--kubeconfig', kubeconfig, '--state-dir', dir.path, '--listen', ':0'], {
      NODENAME: node,
    });
    const url = await p.listening;
    await waitFor('ready', async () => (await fetch(`${url}/readyz`)).status === 200, 20_000);
    return url;
  }

  it('gives every pod one address of each family, IPv4 first, and the kubelet reports both', async () => {
    const node = 'dual-1';
    await c.addNode(node);
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [v6(range(10)), v4(range(10))] },
    );
    const url = await start(node);
    kubelet = startSimKubelet({
      kc: c.kc,
      nodeName: node,
      sidecarUrl: url,
      logger: silentLogger(),
      backoff: { initialMs: 20, maxMs: 200 },
    });
    await kubelet.whenSynced();
    for (const i of range(3)) await createPod(c, `web-${i}`, node);
    const running = async () =>
      (
        await c.core.listNamespacedPod({
          namespace: 'default',
          fieldSelector: `spec.nodeName=${node}`,
        })
      ).items;
    await waitFor(
      'three pods Running with both addresses',
      async () =>
        (await running()).filter((x) => (x.status?.podIPs ?? []).length === 2).length === 3,
      20_000,
    );
    const held = await call<{
      IPConfigurationStatus: { IPAddress: string; PodInfo: { PodName: string } | null }[];
    }>(url, '/debug/ipaddresses', { IPConfigStateFilter: ['Assigned'] });
    for (const pod of await running()) {
      const ips = pod.status?.podIPs?.map((x) => x.ip) ?? [];
      expect(pod.status?.podIP).to.equal(ips[0]);
      expect(ips[0]).to.match(/^10\.30\.1\.\d+$/);
      expect(ips[1]).to.match(/^fd00:30::1:[0-9a-f]+$/);
      // What the pod reports is what the store holds for it, both families.
      const mine = held.IPConfigurationStatus.filter(
        (s) => s.PodInfo?.PodName === pod.metadata?.name,
      );
      expect(mine.map((s) => s.IPAddress)).to.deep.equal(ips);
    }

    // The CNS answer itself: one podIPInfo per family, each with its own subnet and gateway.
    const answer = await call<IpConfigs>(url, '/network/requestipconfigs', request('direct'));
    expect(answer.response.ReturnCode).to.equal(0);
    expect(
      answer.podIPInfo.map((x) => [
        x.PodIPConfig.PrefixLength,
        x.NetworkContainerPrimaryIPConfig.IPSubnet,
        x.NetworkContainerPrimaryIPConfig.GatewayIPAddress,
      ]),
    ).to.deep.equal([
      [16, { IPAddress: '10.30.0.4', PrefixLength: 16 }, '10.30.0.1'],
      [112, { IPAddress: 'fd00:30::4', PrefixLength: 112 }, 'fd00:30::1'],
    ]);
    await call(url, '/network/releaseipconfigs', request('direct'));

    const all = await call<{ IPConfigurationStatus: { IPAddress: string }[] }>(
      url,
      '/debug/ipaddresses',
      {},
    );
    expect(all.IPConfigurationStatus).to.have.length(20);
    const pool = await call<{
      families: Record<
        string,
        { subnet: string; exhausted: boolean; ipCounts: { Assigned: number } }
      >;
    }>(url, '/debug/pool');
    expect(Object.keys(pool.families)).to.deep.equal(['IPv4', 'IPv6']);
    expect(pool.families.IPv6).to.deep.include({ subnet: 'pods-v6', exhausted: false });
    expect(pool.families.IPv4?.ipCounts.Assigned).to.equal(3);
    expect(pool.families.IPv6?.ipCounts.Assigned).to.equal(3);
    const metrics = parseProm(await call<string>(url, '/metrics'));
    const cns = { podnet_arm_id: '', customer_metric: 'customer metric' };
    expect(
      value(metrics, 'cx_ipam_pod_allocated_ips', {
        ...cns,
        subnet: 'pods-v4',
        subnet_cidr: '10.30.0.0/16',
      }),
    ).to.equal(3);
    expect(
      value(metrics, 'cx_ipam_pod_allocated_ips', {
        ...cns,
        subnet: 'pods-v6',
        subnet_cidr: 'fd00:30::/112',
        family: 'IPv6',
      }),
    ).to.equal(3);
    const v4Series = metrics.samples.filter(
      (s) => s.name === 'cx_ipam_pod_allocated_ips' && s.labels.subnet === 'pods-v4',
    );
    expect(v4Series.map((s) => s.labels)).to.deep.equal([
      { ...cns, subnet: 'pods-v4', subnet_cidr: '10.30.0.0/16' },
    ]);

    // The store is lost (a new disk): the restarted sidecar adopts both addresses
    // every running pod reports in status.podIPs, and hands neither out again.
    await kubelet.stop();
    kubelet = undefined;
    p!.child.kill('SIGTERM');
    expect((await p!.exited).code).to.equal(0);
    p = undefined;
    dir.remove();
    dir = tempDir();
    const again = await start(node);
    const reported = (await running()).flatMap((x) => x.status?.podIPs?.map((y) => y.ip) ?? []);
    await waitFor('both families adopted', async () => {
      const now = await call<{ IPConfigurationStatus: { IPAddress: string }[] }>(
        again,
        '/debug/ipaddresses',
        { IPConfigStateFilter: ['Assigned'] },
      );
      return now.IPConfigurationStatus.length === 6;
    });
    const adopted = await call<{ IPConfigurationStatus: { IPAddress: string }[] }>(
      again,
      '/debug/ipaddresses',
      { IPConfigStateFilter: ['Assigned'] },
    );
    expect(adopted.IPConfigurationStatus.map((x) => x.IPAddress).sort()).to.deep.equal(
      [...reported].sort(),
    );
    const fresh = await call<IpConfigs>(again, '/network/requestipconfigs', request('web-new'));
    for (const x of fresh.podIPInfo) expect(reported).to.not.include(x.PodIPConfig.IPAddress);
    expect(fresh.podIPInfo).to.have.length(2);
    const metricsAfter = parseProm(await call<string>(again, '/metrics'));
    expect(value(metricsAfter, 'pool_monitor_ips_adopted_total')).to.equal(6);
  });

  it('assigns nothing without a free IPv6 address, then both once one is released', async () => {
    const node = 'dual-2';
    // IPv6's subnet ran dry at 3 addresses; IPv4 has 10.
    await createNnc(
      c,
      node,
      { requestedIPCount: 10 },
      { scaler: DEFAULT_SCALER, networkContainers: [v4(range(10)), v6(range(3))] },
    );
    await setCss(c, 'pods-v4', false);
    await setCss(c, 'pods-v6', true);
    for (const i of range(3)) await createPod(c, `dry-${i}`, node);
    const url = await start(node);
    for (const i of range(3)) {
      const got = await call<IpConfigs>(url, '/network/requestipconfigs', request(`dry-${i}`));
      expect(got.podIPInfo).to.have.length(2);
    }
    const before = await call<unknown>(url, '/debug/ipaddresses', {});
    const refused = await call<IpConfigs>(url, '/network/requestipconfigs', request('dry-3'));
    expect(refused.response.ReturnCode).to.equal(32);
    expect(refused.response.Message).to.match(/no Available IPv6 address/);
    expect(refused.podIPInfo).to.deep.equal([]);
    expect(await call<unknown>(url, '/debug/ipaddresses', {})).to.deep.equal(before);
    const pool = await call<{
      exhausted: boolean;
      families: Record<string, { exhausted: boolean }>;
    }>(url, '/debug/pool');
    expect(pool.exhausted).to.equal(true);
    expect(pool.families.IPv4?.exhausted).to.equal(false);
    expect(pool.families.IPv6?.exhausted).to.equal(true);

    await call(url, '/network/releaseipconfigs', request('dry-0'));
    const got = await call<IpConfigs>(url, '/network/requestipconfigs', request('dry-3'));
    expect(got.podIPInfo.map((x) => x.PodIPConfig.IPAddress)).to.have.length(2);
  });

  it('a scale-down marks the same number of each family; a restart hands out nothing twice', async () => {
    const node = 'dual-3';
    await createNnc(
      c,
      node,
      { requestedIPCount: 20 },
      { scaler: DEFAULT_SCALER, networkContainers: [v4(range(20)), v6(range(20))] },
    );
    await setCss(c, 'pods-v4', false);
    await setCss(c, 'pods-v6', false);
    for (const i of range(3)) await createPod(c, `down-${i}`, node);
    let url = await start(node);
    const given = new Map<string, string[]>();
    for (const i of range(3)) {
      const got = await call<IpConfigs>(url, '/network/requestipconfigs', request(`down-${i}`));
      given.set(
        `down-${i}`,
        got.podIPInfo.map((x) => x.PodIPConfig.IPAddress),
      );
    }
    // Demand 3, batch 10, threshold 50 %: the target is 10; 10 of each family are marked.
    await waitFor('request 10', async () => (await getNnc(c, node)).spec?.requestedIPCount === 10);
    const notInUse = (await getNnc(c, node)).spec?.ipsNotInUse ?? [];
    expect(notInUse.filter((x) => x.includes('-8004-'))).to.have.length(10);
    expect(notInUse.filter((x) => x.includes('-8006-'))).to.have.length(10);
    // The fulfiller's part, by hand: each family's container drops the ids given back.
    const gone = new Set(notInUse);
    const keep = (family: 4 | 6) => range(20).filter((i) => !gone.has(id(family, i)));
    await setStatus(c, node, {
      scaler: DEFAULT_SCALER,
      networkContainers: [v4(keep(4)), v6(keep(6))],
    });
    await waitFor(
      'ipsNotInUse cleared',
      async () => ((await getNnc(c, node)).spec?.ipsNotInUse ?? []).length === 0,
    );

    // Restart on the same state dir: the pods keep both addresses, a new pod gets two others.
    p!.child.kill('SIGTERM');
    expect((await p!.exited).code).to.equal(0);
    url = await start(node);
    for (const [pod, ips] of given) {
      const again = await call<IpConfigs>(url, '/network/requestipconfigs', request(pod));
      expect(again.podIPInfo.map((x) => x.PodIPConfig.IPAddress)).to.deep.equal(ips);
    }
    await createPod(c, 'down-new', node);
    const fresh = await call<IpConfigs>(url, '/network/requestipconfigs', request('down-new'));
    const taken = [...given.values()].flat();
    expect(fresh.podIPInfo).to.have.length(2);
    for (const x of fresh.podIPInfo) expect(taken).to.not.include(x.PodIPConfig.IPAddress);
    await deletePod(c, 'down-new');
  });
});
