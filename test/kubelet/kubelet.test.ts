import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Pod } from '@kubernetes/client-node';
import { classifyAnswer, httpCniClient, ipConfigsRequest } from '../../harness/kubelet/cni.ts';
import { podIpsOf, runningStatus } from '../../harness/kubelet/kube.ts';
import { resultAddresses } from '../../harness/kubelet/netns-cni.ts';
import {
  scheduledAt,
  SimKubelet,
  type PodStatusWriter,
  type StatusWriteResult,
} from '../../harness/kubelet/kubelet.ts';
import { ANNOTATION_SCHEDULED_AT } from '../../harness/workload/pod.ts';
import { startFakeCns, type FakeCns } from './fake-cns.ts';

function pod(
  name: string,
  extra: { node?: string; phase?: string; hostNetwork?: boolean; at?: number } = {},
): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid: `uid-${name}`,
      resourceVersion: '1',
      annotations: extra.at !== undefined ? { [ANNOTATION_SCHEDULED_AT]: String(extra.at) } : {},
    },
    spec: {
      nodeName: extra.node ?? 'node-a',
      containers: [],
      hostNetwork: extra.hostNetwork ?? false,
    },
    status: extra.phase ? { phase: extra.phase } : {},
  };
}

class MemoryWriter implements PodStatusWriter {
  readonly running = new Map<string, string[]>();
  answer: StatusWriteResult = 'ok';
  failures = 0;
  /** Run during each status write (e.g. to let the clock move). */
  during: () => void = () => {};
  async setRunning(p: V1Pod, ips: string[]): Promise<StatusWriteResult> {
    this.during();
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('HTTP 500');
    }
    if (this.answer === 'ok') this.running.set(p.metadata!.name!, ips);
    return this.answer;
  }
}

const until = async (cond: () => boolean, what: string, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
};

describe('sim/kubelet', () => {
  let cns: FakeCns;
  let writer: MemoryWriter;
  let kubelet: SimKubelet;
  let now: number;
  const make = (extra: Partial<ConstructorParameters<typeof SimKubelet>[0]> = {}) =>
    new SimKubelet({
      nodeName: 'node-a',
      cni: httpCniClient(cns.url),
      writer,
      backoff: { initialMs: 5, maxMs: 20 },
      clock: {
        now: () => now,
        sleep: (ms, signal) =>
          new Promise<void>((resolve) => {
            const t = setTimeout(resolve, ms);
            signal?.addEventListener('abort', () => {
              clearTimeout(t);
              resolve();
            });
          }),
      },
      ...extra,
    });

  beforeEach(async () => {
    cns = await startFakeCns(['10.240.0.10', '10.240.0.11']);
    writer = new MemoryWriter();
    now = 10_000;
    kubelet = make();
  });
  afterEach(async () => {
    await kubelet.stop();
    await cns.close();
  });

  it('gets each pod an IP over HTTP, marks it Running and records its wait', async () => {
    kubelet.onPod(pod('a', { at: 9_000 }));
    kubelet.onPod(pod('b', { at: 9_500 }));
    await until(() => writer.running.size === 2, 'two running pods');
    expect([...writer.running.values()].flat().sort()).to.deep.equal([
      '10.240.0.10',
      '10.240.0.11',
    ]);
    expect(kubelet.waits.map((w) => w.waitMs).sort((x, y) => x - y)).to.deep.equal([500, 1000]);

    expect(cns.bodies[0]).to.deep.include({
      infraContainerID: 'uid-a',
      orchestratorContext: { PodName: 'a', PodNamespace: 'default' },
      desiredIPAddresses: [],
    });
    expect(cns.bodies.map((b) => b.podInterfaceID).sort()).to.deep.equal([
      'uid-a-eth0',
      'uid-b-eth0',
    ]);
    expect(kubelet.counters).to.include({
      podsSeen: 2,
      ipsAssigned: 2,
      statusWrites: 2,
      noIpAnswers: 0,
    });
    expect(kubelet.runningPods()).to.equal(2);
    // Updates of a running pod change nothing.
    kubelet.onPod(pod('a', { phase: 'Running' }));
    expect(kubelet.counters.ipRequests).to.equal(2);
  });

  it('a pod waits until the CNI answer that gave it its IP; the status write is not part of it', async () => {
    writer.during = () => (now += 700);
    kubelet.onPod(pod('slow', { at: 9_000 }));
    await until(() => writer.running.size === 1, 'one running pod');
    const [w] = kubelet.waits;
    expect(w).to.include({ scheduledAt: 9_000, ipAt: 10_000, runningAt: 10_700, waitMs: 1000 });
  });
  it('retries with backoff while there is no IP, then gets one that was released', async () => {
    kubelet.onPod(pod('a'));
    kubelet.onPod(pod('b'));
    kubelet.onPod(pod('c'));
    await until(() => writer.running.size === 2 && kubelet.counters.noIpAnswers >= 2, 'c waiting');
    expect(kubelet.waitingPods()).to.equal(1);
    const holder = [...writer.running.keys()][0]!;
    kubelet.onPod(pod(holder, { phase: 'Succeeded' }));
    // The CNS frees the IP before the kubelet counts the answer to its DEL: wait for both.
    await until(() => writer.running.has('c') && kubelet.counters.releases === 1, 'c running');
    expect(cns.releases).to.deep.equal([`uid-${holder}-eth0`]);
    expect(kubelet.counters.releases).to.equal(1);
  });

  it('releases on deletion, also for a pod still waiting, and ignores pods not its own', async () => {
    cns.free = [];
    kubelet.onPod(pod('w'));
    kubelet.onPod(pod('other', { node: 'node-b' }));
    kubelet.onPod(pod('host', { hostNetwork: true }));
    kubelet.onPod(pod('done', { phase: 'Succeeded' }));
    await until(() => kubelet.counters.noIpAnswers >= 1, 'a 32 answer');
    kubelet.onPodDeleted(pod('w'));
    await until(() => cns.releases.length === 1, 'release');
    expect(cns.releases).to.deep.equal(['uid-w-eth0']);
    expect(writer.running.size).to.equal(0);
    expect(kubelet.counters.podsSeen).to.equal(1);
    expect(cns.bodies.every((b) => b.infraContainerID === 'uid-w')).to.equal(true);
    expect(kubelet.waitingPods()).to.equal(0);
  });

  it('tells of a pod the workload ended before it ran, with its wait; not of pods a stop ends', async () => {
    await kubelet.stop();
    const ended: Array<{ name: string; waitedMs: number }> = [];
    kubelet = make({ onEndedWaiting: (e) => ended.push({ name: e.name, waitedMs: e.waitedMs }) });
    cns.free = [];
    kubelet.onPod(pod('deleted', { at: 9_000 }));
    kubelet.onPod(pod('completed', { at: 9_500 }));
    kubelet.onPod(pod('stopped', { at: 9_800 }));
    await until(() => kubelet.counters.noIpAnswers >= 3, 'three pods waiting');
    now = 12_000;
    kubelet.onPodDeleted(pod('deleted'));
    kubelet.onPod(pod('completed', { phase: 'Succeeded' }));
    await until(() => ended.length === 2, 'two ended pods');
    await kubelet.stop();
    expect(ended.sort((x, y) => x.name.localeCompare(y.name))).to.deep.equal([
      { name: 'completed', waitedMs: 2_500 },
      { name: 'deleted', waitedMs: 3_000 },
    ]);
    expect(kubelet.waits).to.deep.equal([]);
  });

  it('tells of a pod that got its IP but had finished before its status write', async () => {
    await kubelet.stop();
    const ended: string[] = [];
    kubelet = make({ onEndedWaiting: (e) => ended.push(e.name) });
    writer.answer = 'finished';
    kubelet.onPod(pod('a'));
    await until(() => cns.releases.length === 1, 'release');
    expect(ended).to.deep.equal(['a']);
  });

  it('drops CNI DELs at the given rate: the IP stays assigned, the drop is recorded', async () => {
    await kubelet.stop();
    const draws = [0.1, 0.9]; // the first release is dropped (0.1 < 0.5), the second is sent
    kubelet = make({ dropReleaseRate: 0.5, random: () => draws.shift() ?? 0.9 });
    kubelet.onPod(pod('a'));
    kubelet.onPod(pod('b'));
    await until(() => writer.running.size === 2, 'two running pods');
    kubelet.onPodDeleted(pod('a'));
    await until(() => kubelet.counters.releasesDropped === 1, 'a dropped DEL');
    kubelet.onPod(pod('b', { phase: 'Succeeded' }));
    // The CNS sees the DEL before the kubelet counts its answer: wait for both.
    await until(() => cns.releases.length === 1 && kubelet.counters.releases === 1, 'b released');
    expect(cns.releases).to.deep.equal(['uid-b-eth0']);
    expect(kubelet.dropped).to.deep.equal([
      { namespace: 'default', name: 'a', ips: [writer.running.get('a')![0]], why: 'deleted' },
    ]);
    expect(kubelet.counters).to.include({ releases: 1, releasesDropped: 1 });
  });

  it('gives the IP back when the pod finished before its status write', async () => {
    writer.answer = 'finished';
    kubelet.onPod(pod('a'));
    await until(() => cns.releases.length === 1, 'release');
    expect(cns.free).to.include('10.240.0.10');
    expect(kubelet.waits).to.deep.equal([]);
  });

  it('retries failed status writes', async () => {
    writer.failures = 2;
    kubelet.onPod(pod('a'));
    await until(() => writer.running.size === 1, 'running');
    expect(kubelet.counters.errors).to.equal(2);
  });

  it('stops asking on a permanent error', async () => {
    cns.failWith = { status: 400, code: 23 };
    kubelet.onPod(pod('a'));
    await until(() => kubelet.counters.podsFailed === 1, 'failure');
    expect(kubelet.counters.ipRequests).to.equal(1);
  });

  it('runs a host-network pod with the node address and asks the pool for nothing', async () => {
    kubelet = make({ nodeIp: '10.224.0.4' });
    writer.failures = 1; // the first status write fails and is retried
    kubelet.onPod(pod('host', { hostNetwork: true }));
    kubelet.onPod(pod('host', { hostNetwork: true })); // an update: started once only
    await until(() => writer.running.has('host'), 'host running');
    expect(writer.running.get('host')).to.deep.equal(['10.224.0.4']);
    expect(cns.bodies).to.have.length(0);
    expect(kubelet.counters.statusWrites).to.equal(1);
  });

  it('bounds concurrent IPAM calls and stops cleanly while pods wait', async () => {
    await kubelet.stop();
    kubelet = make({ concurrency: 2 });
    cns.delayMs = 15;
    cns.free = Array.from({ length: 8 }, (_, i) => `10.240.1.${i}`);
    for (let i = 0; i < 10; i += 1) kubelet.onPod(pod(`p${i}`));
    await until(
      () => writer.running.size === 8 && kubelet.counters.noIpAnswers >= 2,
      'eight running',
    );
    expect(cns.maxInFlight).to.equal(2);
    expect(kubelet.waitingPods()).to.equal(2);
    // stop() ends the two waiting pods' backoff loops and resolves.
    await kubelet.stop();
    const requests = kubelet.counters.ipRequests;
    kubelet.onPod(pod('late'));
    await new Promise((r) => setTimeout(r, 30));
    expect(kubelet.counters.ipRequests).to.equal(requests);
  });

  it('classifies CNS answers and builds request bodies', () => {
    expect(
      classifyAnswer(200, {
        podIPInfo: [{ PodIPConfig: { IPAddress: '10.0.0.5' } }],
        response: { ReturnCode: 0 },
      }),
    ).to.deep.equal({ kind: 'ok', ips: ['10.0.0.5'] });
    expect(classifyAnswer(200, { response: { ReturnCode: 32, Message: 'none' } })).to.deep.equal({
      kind: 'no-ip',
      message: 'none',
    });
    expect(classifyAnswer(400, { response: { ReturnCode: 23, Message: 'bad' } })).to.deep.equal({
      kind: 'error',
      retryable: false,
      message: 'HTTP 400, ReturnCode 23: bad',
    });
    expect(classifyAnswer(500, undefined)).to.deep.equal({
      kind: 'error',
      retryable: true,
      message: 'HTTP 500, ReturnCode none: HTTP 500',
    });
    expect(classifyAnswer(429, undefined)).to.include({ retryable: true });
    expect(ipConfigsRequest({ podName: 'p', podNamespace: 'ns', podUid: 'u1' })).to.deep.equal({
      podInterfaceID: 'u1-eth0',
      infraContainerID: 'u1',
      orchestratorContext: { PodName: 'p', PodNamespace: 'ns' },
      desiredIPAddresses: [],
    });
    expect(scheduledAt(pod('x', { at: 42 }), 7)).to.equal(42);
    expect(scheduledAt({ metadata: { creationTimestamp: new Date(1000) } }, 7)).to.equal(1000);
    expect(scheduledAt({}, 7)).to.equal(7);
  });

  it("reports a dual-stack pod's addresses as the kubelet does: primary family first, one of each", () => {
    // The sidecar answers IPv4 first; an answer in another order is sorted the same way.
    expect(podIpsOf(['fd00::5', '10.0.0.5'])).to.deep.equal(['10.0.0.5', 'fd00::5']);
    expect(podIpsOf(['10.0.0.5', '10.0.0.6', 'fd00::5', 'bogus'])).to.deep.equal([
      '10.0.0.5',
      'fd00::5',
    ]);
    expect(podIpsOf(['10.0.0.5', 'fd00::5'], 6)).to.deep.equal(['fd00::5', '10.0.0.5']);
    expect(podIpsOf(['fd00::5'])).to.deep.equal(['fd00::5']);
    const status = runningStatus(['10.0.0.5', 'fd00::5'], new Date(0));
    expect(status?.podIP).to.equal('10.0.0.5');
    expect(status?.podIPs).to.deep.equal([{ ip: '10.0.0.5' }, { ip: 'fd00::5' }]);
    expect(
      classifyAnswer(200, {
        podIPInfo: [
          { PodIPConfig: { IPAddress: '10.0.0.5' } },
          { PodIPConfig: { IPAddress: 'fd00::5' } },
        ],
        response: { ReturnCode: 0 },
      }),
    ).to.deep.equal({ kind: 'ok', ips: ['10.0.0.5', 'fd00::5'] });
    // A real CNI result (embedded --netns): one ips entry per family, prefixes dropped.
    const result = {
      ips: [{ address: 'fd00::5/112' }, { address: '10.0.0.5/24' }, { address: 'x' }],
    };
    expect(resultAddresses(result)).to.deep.equal(['10.0.0.5', 'fd00::5']);
    expect(resultAddresses({ ips: [{ address: '10.0.0.5/24' }] })).to.deep.equal(['10.0.0.5']);
    expect(resultAddresses(undefined)).to.deep.equal([]);
  });

  it('reports an unreachable sidecar as retryable', async () => {
    const gone = httpCniClient('http://127.0.0.1:1', { timeoutMs: 500 });
    const r = await gone.requestIp({ podName: 'p', podNamespace: 'ns', podUid: 'u' });
    expect(r).to.include({ kind: 'error', retryable: true });
    expect((r as { message: string }).message).to.match(/requestipconfigs: ECONNREFUSED/);
  });

  it('gives up on a sidecar that never answers after its timeout, as retryable', async () => {
    const silent = createServer(() => {}); // reads the request, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const { port } = silent.address() as AddressInfo;
      const cni = httpCniClient(`http://127.0.0.1:${port}`, { timeoutMs: 200 });
      const started = performance.now();
      const r = await cni.releaseIp({ podName: 'p', podNamespace: 'ns', podUid: 'u' });
      expect(r).to.include({ kind: 'error', retryable: true });
      expect((r as { message: string }).message).to.match(
        /releaseipconfigs: .*no answer in 200 ms/,
      );
      expect(performance.now() - started).to.be.below(5000);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});
