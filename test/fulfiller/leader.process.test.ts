// Two `bin/pool-monitor fulfiller` processes against the local API server
// with RBAC on, as the service account of manifests/ with exactly its
// grants (test/support/rbac.ts), each through its own recording proxy so
// every request is attributed (and none may be refused): one
// leads and the standby never writes; kill -9 of the leader hands over within
// the lease duration; SIGTERM hands over at once; a leader whose Lease writes
// fail stops writing before its lease can expire. Short lease timings through
// the --leader-elect-* flags keep it quick (the defaults are client-go's).
import { expect } from 'chai';
import type { ApiServer } from '../../harness/apiserver/server.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import {
  elected,
  leaderElectFlags,
  startReplica,
  stopReplicas,
  type LeaseTimings,
  type Replica,
} from '../support/fulfiller-process.ts';
import { strictCluster, type StrictCluster } from '../support/rbac.ts';
import { addressesOf } from '../support/test-cluster.ts';
import { sleep, waitFor } from '../support/wait.ts';

const FAST: LeaseTimings = { lease: 3000, renew: 2000, retry: 500 };

// Request paths are matched as they go over the wire (the proxies see URLs).
const isLease = (path: string) => path.includes('/leases');

describe('fulfiller processes: leader election over HTTP', function () {
  this.timeout(60_000);
  let cluster: StrictCluster;
  let server: ApiServer;
  let token: string;
  const replicas: Replica[] = [];

  const get = (name: string) => cluster.getNnc(name);
  const setRequest = (name: string, requestedIPCount: number) =>
    cluster.setSpec(name, { requestedIPCount });
  const served = (name: string, n: number, timeoutMs = 15_000) =>
    cluster.nncWithIps(name, n, timeoutMs);
  const addresses = (nncs: NodeNetworkConfig[]) => nncs.flatMap(addressesOf);

  /** Two replicas; resolves once one holds the lease: [leader, standby]. */
  async function pair(t = FAST): Promise<[Replica, Replica]> {
    for (const name of ['replica-a', 'replica-b'])
      replicas.push(
        await startReplica(server, token, name, [
          ...['--subnet', '10.240.0.0/24'],
          ...leaderElectFlags(t),
        ]),
      );
    return elected(cluster.kc, replicas);
  }

  beforeEach(async () => {
    cluster = await strictCluster();
    ({ server } = cluster);
    token = await cluster.access.token('fulfiller');
    for (const name of ['node-1', 'node-2']) await cluster.addNode(name);
  });

  afterEach(async () => {
    await stopReplicas(replicas);
    await cluster.close();
  });

  it('one leads, the standby never writes; kill -9 of the leader: the standby takes over within the lease duration', async () => {
    const [leader, standby] = await pair();
    await setRequest('node-1', 10);
    await served('node-1', 10);
    for (const r of [leader, standby]) {
      const url = await r.proc.url();
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      expect((await fetch(`${url}/healthz`)).status).to.equal(200);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).to.match(
        new RegExp(`^pool_monitor_fulfiller_leader ${r === leader ? 1 : 0}$`, 'm'),
      );
    }
    expect(
      standby.proxy.writes().filter((w) => !isLease(w.path)),
      'standby writes',
    ).to.deep.equal([]);
    expect(leader.proxy.writes().some((w) => w.path.endsWith('/nodenetworkconfigs'))).to.equal(
      true,
    );

    const killedAt = Date.now();
    leader.proc.child.kill('SIGKILL');
    const takeover = await waitFor(
      'the standby holds the lease',
      () => standby.proxy.writes(killedAt).find((w) => isLease(w.path) && w.status < 300),
      15_000,
    );
    const ms = takeover.at - killedAt;
    // The standby (told of each renewal by its Lease watch) takes over one
    // lease duration after the last renewal, which came at most one retry
    // period before the kill; the margin is for a loaded machine.
    expect(ms).to.be.at.least(FAST.lease - FAST.retry - 100);
    expect(ms).to.be.at.most(FAST.lease + 1500);
    await setRequest('node-2', 10);
    const all = [await get('node-1'), await served('node-2', 10)] as NodeNetworkConfig[];
    const ips = addresses(all);
    expect(new Set(ips).size, 'an address on two NNCs').to.equal(ips.length);
    // With RBAC on, nothing either replica asked for was refused.
    const denied = replicas
      .flatMap((r) => r.proxy.requests)
      .filter((r) => r.status === 401 || r.status === 403)
      .map((r) => `${r.method} ${r.url} ${r.status}`);
    expect(denied, 'requests the RBAC manifest does not grant').to.deep.equal([]);
  });

  it('SIGTERM: the leader steps down, releases the lease and exits 0; the standby takes over at once', async () => {
    // A 2 s retry period as client-go's: polling alone would take up to 4.4 s.
    const [leader, standby] = await pair({ lease: 6000, renew: 4000, retry: 2000 });
    await served('node-1', 0);
    const termAt = Date.now();
    leader.proc.child.kill('SIGTERM');
    expect(await leader.proc.exited, leader.proc.output()).to.equal(0);
    const takeover = await waitFor(
      'the standby holds the lease',
      () => standby.proxy.writes(termAt).find((w) => isLease(w.path) && w.status < 300),
      10_000,
    );
    expect(takeover.at - termAt).to.be.below(1500);
    expect(leader.proc.lines.some((l) => l.msg === 'lease released')).to.equal(true);
    // The release is the old leader's last write.
    const last = leader.proxy.writes().at(-1)!;
    expect(last).to.include({ method: 'PUT', status: 200 });
    expect(isLease(last.path)).to.equal(true);
    await setRequest('node-2', 4);
    await served('node-2', 4);
  });

  it('a leader whose Lease writes fail stops writing before its lease can expire', async () => {
    const [leader, standby] = await pair();
    await setRequest('node-1', 4);
    await served('node-1', 4);
    server.faults.inject({ verb: 'update', resource: 'leases', status: 500, times: 100_000 });
    const faultAt = Date.now();
    // Keep the leader busy: it would write statuses if it still could.
    let n = 5;
    const busy = setInterval(() => void setRequest('node-1', n++ % 2 === 0 ? 6 : 5), 150);
    try {
      const lost = await leader.proc.waitLog('leadership lost', 15_000);
      await sleep(FAST.lease);
      const renewals = leader.proxy
        .writes()
        .filter((w) => isLease(w.path) && w.status < 300 && w.sentAt < faultAt + 100);
      const lastRenewal = renewals.at(-1)!.sentAt;
      const lostAt = Date.parse(String(lost.ts));
      expect(lostAt - lastRenewal, 'stepped down after').to.be.at.most(FAST.renew + 300);
      expect(lostAt).to.be.below(lastRenewal + FAST.lease);
      const late = leader.proxy.writes(lastRenewal + FAST.renew).filter((w) => !isLease(w.path));
      expect(late, 'writes after the renew deadline').to.deep.equal([]);
      expect(standby.proxy.writes().filter((w) => !isLease(w.path))).to.deep.equal([]);
    } finally {
      clearInterval(busy);
    }
    // The API heals: a leader again, and node-1 is served.
    server.faults.clear();
    await setRequest('node-1', 8);
    await served('node-1', 8);
  });
});
