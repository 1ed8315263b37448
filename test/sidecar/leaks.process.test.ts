// The node IP store follows the pods, through the real sidecar process
// (bin/pool-monitor sidecar --leak-grace 2) against the local API server:
// leaked IPs are reclaimed after the grace and never before, a recreated
// sandbox's older IP at once, a lost pod watch reclaims nothing, a restart
// does not forget a deletion, leaked IPs do not wedge a scale-down, and a
// store lost on a busy node is rebuilt from the pods' status.podIPs before
// anything is handed out. Reclaim times are read from the sidecar's own
// warning log (its `ts`) against the moment the test deleted the pod (or
// started the process), so "not before the grace" holds however loaded the
// machine is. LEAK_VERBOSE=1 prints the measured delays.
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  container,
  createNnc,
  createPod,
  DEFAULT_SCALER,
  deletePod,
  getNnc,
  NS,
  setPodPhase,
  killStraySidecars,
  logLines,
  spawnSidecar,
  startCluster,
  tempDir,
  waitFor,
  type Cluster,
  type LogLine,
  type SidecarProcess,
} from './harness.ts';
import { cniBody, cniCall, cniRequest, setPodRunning, type IpamAnswer } from './leak-helpers.ts';

const GRACE_S = 2;
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

interface LeakLine extends LogLine {
  pod?: string;
  ip?: string;
  reason?: string;
  absentSeconds?: number;
}

/** The sidecar's 'leaked IP reclaimed' line for `pod`, once it is there. */
function reclaimOf(p: SidecarProcess, pod: string, timeoutMs = 15_000): Promise<LeakLine> {
  return waitFor(
    `reclaim of ${pod}`,
    () => logLines<LeakLine>(p, 'leaked IP reclaimed').find((l) => l.pod === `default/${pod}`),
    timeoutMs,
  );
}

async function assigned(url: string): Promise<Map<string, string>> {
  const res = await fetch(`${url}/debug/ipaddresses`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ IPConfigStateFilter: ['Assigned'] }),
  });
  const body = (await res.json()) as {
    IPConfigurationStatus: { IPAddress: string; PodInfo: { PodName: string } | null }[];
  };
  return new Map(body.IPConfigurationStatus.map((s) => [s.IPAddress, s.PodInfo?.PodName ?? '']));
}

function report(what: string, ms: number): void {
  if (process.env.LEAK_VERBOSE) console.log(`      ${what}: ${ms} ms (grace ${GRACE_S * 1000} ms)`);
}

describe('sidecar process: leaked IPs and the store following the pods', function () {
  this.timeout(60_000);
  let c: Cluster;
  let dir: ReturnType<typeof tempDir>;
  const running: SidecarProcess[] = [];
  let seq = 0;
  let node = '';

  before(async () => {
    c = await startCluster();
  });
  beforeEach(() => {
    seq += 1;
    node = `leak-node-${seq}`;
    dir = tempDir('sidecar-leaks-');
  });
  afterEach(async () => {
    c.server.faults.clear();
    for (const p of running.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
      await p.exited;
    }
    dir.remove();
  });
  after(async () => {
    killStraySidecars();
    await c?.close();
  });

  const start = async (
    extra: string[] = ['--leak-grace', String(GRACE_S)],
  ): Promise<{ url: string; p: SidecarProcess }> => {
    const p = spawnSidecar([
      '--node-name',
      node,
      '--kubeconfig',
      c.server.kubeconfigPath,
      '--state-dir',
      dir.path,
      '--listen',
      '127.0.0.1:0',
      ...extra,
    ]);
    running.push(p);
    const url = await Promise.race([
      p.listening,
      p.exited.then(({ code }) => {
        throw new Error(`sidecar exited ${code} before listening: ${p.stderr()}`);
      }),
    ]);
    await waitFor('ready', async () => (await fetch(`${url}/readyz`)).ok, 15_000);
    return { url, p };
  };
  const stop = async (p: SidecarProcess): Promise<void> => {
    p.child.kill('SIGTERM');
    expect((await p.exited).code).to.equal(0);
  };
  const nnc = (ips: number, request = ips) =>
    createNnc(
      c,
      node,
      { requestedIPCount: request },
      { scaler: DEFAULT_SCALER, networkContainers: [container(range(ips))] },
    );
  /** Pods created, each given an IP by the CNI and reported Running with it. */
  const runPods = async (url: string, names: string[]): Promise<Map<string, string>> => {
    const ips = new Map<string, string>();
    for (const name of names) {
      const answer = await cniRequest(url, name);
      expect(answer.ip, `${name}: ${answer.message}`).to.be.a('string');
      ips.set(name, answer.ip as string);
      await setPodRunning(c, name, answer.ip as string);
    }
    return ips;
  };

  it('a pod deleted without a CNI release: reclaimed after the grace, not before (log, Event, metric, /debug/pool)', async () => {
    await nnc(10);
    for (const name of ['gone', 'stay']) await createPod(c, name, node);
    const { url, p } = await start();
    const ips = await runPods(url, ['gone', 'stay']);

    const deletedAt = Date.now();
    await deletePod(c, 'gone');
    // While the grace runs, /debug/pool names the suspect and the time left.
    let suspect: { pod: string; ip: string; reason: string; reclaimInSeconds: number } | undefined;
    await waitFor('suspect or reclaim', async () => {
      const pool = (await (await fetch(`${url}/debug/pool`)).json()) as {
        leaks: { suspects: NonNullable<typeof suspect>[]; graceSeconds: number };
      };
      expect(pool.leaks.graceSeconds).to.equal(GRACE_S);
      suspect ??= pool.leaks.suspects.find((s) => s.pod === 'default/gone');
      return logLines(p, 'leaked IP reclaimed').length > 0;
    });
    expect(suspect).to.deep.include({ ip: ips.get('gone'), reason: 'pod-deleted' });
    expect(suspect?.reclaimInSeconds).to.be.within(0, GRACE_S);

    const line = await reclaimOf(p, 'gone');
    const delay = Date.parse(line.ts ?? '') - deletedAt;
    report('pod deleted -> reclaimed', delay);
    expect(delay, 'reclaimed before the grace').to.be.at.least(GRACE_S * 1000);
    expect(delay).to.be.below(GRACE_S * 1000 + 8000);
    expect(line).to.deep.include({ ip: ips.get('gone'), reason: 'pod-deleted' });
    expect(line.absentSeconds).to.be.at.least(GRACE_S);

    expect([...(await assigned(url))]).to.deep.equal([[ips.get('stay'), 'stay']]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).to.match(/pool_monitor_leaked_ips_reclaimed_total\{reason="pod-deleted"\} 1\n/);
    expect(metrics).to.match(
      /pool_monitor_leaked_ips_reclaimed_total\{reason="pod-completed"\} 0\n/,
    );
    await waitFor('LeakedIPReclaimed event', async () =>
      (await c.core.listNamespacedEvent({ namespace: NS })).items.find(
        (e) =>
          e.involvedObject?.name === node &&
          e.reason === 'LeakedIPReclaimed' &&
          (e.message ?? '').includes(`${ips.get('gone')} `),
      ),
    );
  });

  it('a completed Job pod is reclaimed after the grace; a recreated sandbox releases the older IP at once and keeps the new one', async () => {
    await nnc(10);
    for (const name of ['job', 'web']) await createPod(c, name, node);
    const { url, p } = await start();
    const ips = await runPods(url, ['job', 'web']);

    const renewed: IpamAnswer = await cniRequest(url, 'web', 'web-sandbox-2');
    expect(renewed.ip).to.be.a('string').and.not.equal(ips.get('web'));
    const now = await assigned(url);
    expect(now.has(ips.get('web') as string), 'older sandbox IP released at once').to.equal(false);
    expect(now.get(renewed.ip as string)).to.equal('web');
    const sandbox = await reclaimOf(p, 'web', 2000);
    expect(sandbox).to.deep.include({ ip: ips.get('web'), reason: 'sandbox-recreated' });
    await setPodRunning(c, 'web', renewed.ip as string);

    const doneAt = Date.now();
    await setPodPhase(c, 'job', 'Succeeded');
    const job = await reclaimOf(p, 'job');
    const delay = Date.parse(job.ts ?? '') - doneAt;
    report('Job pod completed -> reclaimed', delay);
    expect(delay).to.be.at.least(GRACE_S * 1000);
    expect(job).to.deep.include({ ip: ips.get('job'), reason: 'pod-completed' });
    // The new sandbox's IP outlived a whole grace.
    expect([...(await assigned(url))]).to.deep.equal([[renewed.ip, 'web']]);
  });

  it('a lost pod watch (dropped, 410, relists failing) reclaims nothing until it lists again; a pod still there keeps its IP', async () => {
    await nnc(10);
    for (const name of ['keep', 'del']) await createPod(c, name, node);
    const { url, p } = await start();
    const ips = await runPods(url, ['keep', 'del']);

    // The watch drops, its resume gets 410 Gone, and three relists fail: the
    // informer restarts with backoff (0.5 s, 1 s, 2 s) - longer than the grace.
    c.server.faults.inject({ verb: 'list', resource: 'pods', status: 500, times: 3 });
    await createPod(c, 'elsewhere', `${node}-other`); // history moves past the sidecar's version
    c.server.faults.compactHistory();
    expect(c.server.faults.dropWatches('pods')).to.be.at.least(1);
    const deletedAt = Date.now();
    await deletePod(c, 'del');
    await waitFor(
      'pod watch lost',
      () =>
        logLines(p, 'pod watch lost: leaked IPs are not reclaimed until it lists again').length > 0,
    );
    const back = await waitFor(
      'pod watch back',
      () => logLines(p, 'pod watch listed again: leak clocks start over')[0],
      15_000,
    );
    const line = await reclaimOf(p, 'del');
    const sinceBack = Date.parse(line.ts ?? '') - Date.parse(back.ts ?? '');
    report('pod deleted while the watch was lost -> reclaimed, after the relist', sinceBack);
    report('  (after the deletion)', Date.parse(line.ts ?? '') - deletedAt);
    expect(sinceBack, 'reclaimed before a whole grace after the relist').to.be.at.least(
      GRACE_S * 1000,
    );
    expect([...(await assigned(url))]).to.deep.equal([[ips.get('keep'), 'keep']]);
  });

  it('a sidecar restarted while a pod was deleted reclaims it after the restart', async () => {
    await nnc(10);
    await createPod(c, 'r', node);
    const first = await start();
    const ips = await runPods(first.url, ['r']);
    await stop(first.p);
    await deletePod(c, 'r');
    const startedAt = Date.now();
    const { url, p } = await start();
    const line = await reclaimOf(p, 'r');
    const delay = Date.parse(line.ts ?? '') - startedAt;
    report('pod deleted while the sidecar was down -> reclaimed after the restart', delay);
    expect(delay).to.be.at.least(GRACE_S * 1000);
    expect(line.ip).to.equal(ips.get('r'));
    expect((await assigned(url)).size).to.equal(0);
  });

  it('leaked Assigned IPs present: the scale-down releases what it can, the rest once reclaimed', async () => {
    // 25 pods hold 25 of 30 IPs; then they are all deleted without a CNI
    // release: target 10, but only the 5 free IPs can be marked.
    await nnc(30);
    const names = range(25).map((i) => `leak-${i}`);
    for (const name of names) await createPod(c, name, node);
    const { url, p } = await start(['--leak-grace', '3']);
    for (const name of names) expect((await cniRequest(url, name)).ip).to.be.a('string');
    await Promise.all(names.map((name) => deletePod(c, name)));

    const spec = async () => {
      const s = (await getNnc(c, node)).spec;
      return { request: s?.requestedIPCount, released: (s?.ipsNotInUse ?? []).length };
    };
    await waitFor('scale-down with what can be marked', async () => {
      const s = await spec();
      return s.request === 10 && s.released >= 5;
    });
    expect(await spec()).to.deep.equal({ request: 10, released: 5 });
    // Once the leaks are reclaimed, the surplus goes back too: 30 - 10.
    await waitFor('surplus released', async () => (await spec()).released === 20, 15_000);
    // The surplus of 20 can be marked once 15 are reclaimed: the last reclaims may log after it.
    await waitFor('every leak reclaimed', () => logLines(p, 'leaked IP reclaimed').length >= 25);
    expect(logLines(p, 'reconcile failed')).to.deep.equal([]);
    expect(logLines(p, 'leaked IP reclaimed')).to.have.length(25);
  });

  it('store deleted on a node with 30 running pods: every address adopted, none handed out twice (review defect)', async () => {
    await nnc(40);
    const names = range(30).map((i) => `run-${i}`);
    for (const name of names) await createPod(c, name, node);
    // A long grace: what is released below is released by the CNI DEL, not reclaimed.
    const first = await start(['--leak-grace', '60']);
    const addresses = await runPods(first.url, names);

    await stop(first.p);
    for (const f of ['ipstore.db', 'ipstore.db-wal', 'ipstore.db-shm'])
      rmSync(join(dir.path, f), { force: true });
    const { url, p } = await start(['--leak-grace', '60']);

    // New pods arrive at once: none may get a running pod's address.
    const fresh: IpamAnswer[] = [];
    for (let i = 0; i < 10; i++) {
      await createPod(c, `new-${i}`, node);
      fresh.push(await cniRequest(url, `new-${i}`));
    }
    const taken = new Set(addresses.values());
    const handedOut = fresh.map((a) => a.ip);
    expect(handedOut.filter((ip) => ip !== undefined && taken.has(ip))).to.deep.equal([]);
    expect(new Set(handedOut).size).to.equal(10);

    const byPod = new Map([...(await assigned(url))].map(([ip, pod]) => [pod, ip]));
    for (const [name, ip] of addresses) expect(byPod.get(name), name).to.equal(ip);
    expect(logLines(p, 'pod IP adopted')).to.have.length(30);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).to.match(/pool_monitor_ips_adopted_total 30\n/);

    // A pod deleted after the rebuild: its CNI DEL names the sandbox the lost
    // store knew, not the adopted one; the pod is gone, so its address goes at once.
    await deletePod(c, 'run-0');
    await waitFor('the sidecar saw the deletion', async () => {
      const pool = (await (await fetch(`${url}/debug/pool`)).json()) as { demand: number };
      return pool.demand === 39;
    });
    expect((await cniCall(url, 'release', cniBody('run-0'))).code).to.equal(0);
    expect((await assigned(url)).has(addresses.get('run-0') as string)).to.equal(false);
    expect(logLines(p, 'adopted ip released')).to.have.length(1);
    expect(logLines(p, 'leaked IP reclaimed')).to.deep.equal([]);
    if (process.env.LEAK_VERBOSE) {
      console.log(`      store lost: ${logLines(p, 'pod IP adopted').length} addresses adopted`);
    }
  });
});
