import { expect } from 'chai';
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../src/clock/clock.ts';
import { WorkloadDriver, type PodApi } from '../../harness/workload/driver.ts';
import { planScenario } from '../../harness/workload/plan.ts';
import {
  ANNOTATION_SCHEDULED_AT,
  LABEL_GROUP,
  WORKLOAD_SELECTOR,
} from '../../harness/workload/pod.ts';
import { parseScenario } from '../../harness/workload/scenario.ts';

/**
 * Virtual time: a sleep first lets pending work run (one macrotask), then
 * advances the clock by its length (not when aborted).
 */
function virtualClock(
  start = 1_000_000,
): Pick<Clock, 'now' | 'sleep'> & { t: number; sleeps: number[] } {
  const c = {
    t: start,
    sleeps: [] as number[],
    now: () => c.t,
    sleep: async (ms: number, signal?: AbortSignal) => {
      c.sleeps.push(ms);
      await new Promise((r) => setImmediate(r));
      if (!signal?.aborted) c.t += ms;
    },
  };
  return c;
}

class FakeApi implements PodApi {
  readonly calls: string[] = [];
  readonly pods = new Map<string, V1Pod>();
  failures: { kind: string; status: number; times: number }[] = [];
  private readonly clock: Pick<Clock, 'now' | 'sleep'>;
  constructor(clock: Pick<Clock, 'now' | 'sleep'>) {
    this.clock = clock;
  }
  private maybeFail(kind: string): void {
    const f = this.failures.find((x) => x.kind === kind && x.times > 0);
    if (f) {
      f.times -= 1;
      throw Object.assign(new Error(`HTTP-Code: ${f.status}`), { code: f.status });
    }
  }
  async createPod(pod: V1Pod) {
    this.maybeFail('create');
    this.calls.push(`${this.clock.now()} create ${pod.metadata!.name} ${pod.spec!.nodeName}`);
    this.pods.set(pod.metadata!.name!, pod);
  }
  async setPodPhase(_ns: string, name: string, phase: string) {
    this.maybeFail('complete');
    this.calls.push(`${this.clock.now()} ${phase} ${name}`);
  }
  async deletePod(_ns: string, name: string) {
    this.maybeFail('delete');
    this.calls.push(`${this.clock.now()} delete ${name}`);
  }
}

const plan = planScenario(
  parseScenario({
    name: 'drv',
    durationSeconds: 10,
    steps: [
      { at: 0, create: 2, group: 'job' },
      { at: 1, complete: 1 },
      { at: 2, delete: 'all' },
    ],
  }),
  ['node-a'],
);

describe('sim/workload/driver', () => {
  it('performs the plan on time, with labelled, scheduled pods', async () => {
    const clock = virtualClock();
    const api = new FakeApi(clock);
    const seen: string[] = [];
    const driver = new WorkloadDriver({
      api,
      plan,
      clock,
      namespace: 'work',
      onAction: (a, outcome) => seen.push(`${a.kind}:${outcome}`),
    });
    await driver.run();
    expect(api.calls).to.deep.equal([
      '1000000 create job-0-1 node-a',
      '1000000 create job-0-2 node-a',
      '1001000 Succeeded job-0-1',
      '1002000 delete job-0-1',
      '1002000 delete job-0-2',
    ]);
    const pod = api.pods.get('job-0-1')!;
    expect(pod.metadata!.namespace).to.equal('work');
    expect(pod.metadata!.labels![LABEL_GROUP]).to.equal('job');
    expect(WORKLOAD_SELECTOR).to.equal('app.kubernetes.io/managed-by=pool-monitor-sim');
    expect(pod.metadata!.labels!['app.kubernetes.io/managed-by']).to.equal('pool-monitor-sim');
    expect(pod.metadata!.annotations![ANNOTATION_SCHEDULED_AT]).to.equal('1000000');
    expect(driver.counters).to.deep.equal({
      created: 2,
      completed: 1,
      deleted: 2,
      already: 0,
      failed: 0,
      retries: 0,
    });
    expect(seen).to.have.length(5);
  });

  it('retries transient failures with backoff and treats 409/404 as done', async () => {
    const clock = virtualClock();
    const api = new FakeApi(clock);
    api.failures = [
      { kind: 'create', status: 500, times: 2 },
      { kind: 'complete', status: 404, times: 1 },
      { kind: 'delete', status: 409, times: 0 },
    ];
    const driver = new WorkloadDriver({
      api,
      plan,
      clock,
      concurrency: 1,
      random: () => 0.5,
      backoff: { initialMs: 100, maxMs: 1000 },
    });
    await driver.run();
    expect(clock.sleeps.slice(0, 2)).to.deep.equal([100, 200]);
    expect(driver.counters).to.include({
      created: 2,
      completed: 0,
      already: 1,
      deleted: 2,
      retries: 2,
    });
  });

  it('counts an action whose earlier attempt landed without an answer as done by it (chaos finding)', async () => {
    // The API server applied the create and the delete but answered 500; the
    // retries get 409 AlreadyExists and 404 NotFound: created and deleted by
    // this workload, not found done already.
    const clock = virtualClock();
    const landed = new Set<string>();
    const api: PodApi = {
      async createPod(pod) {
        const name = pod.metadata!.name!;
        if (landed.has(`create ${name}`))
          throw Object.assign(new Error('HTTP-Code: 409'), { code: 409 });
        landed.add(`create ${name}`);
        throw Object.assign(new Error('HTTP-Code: 500'), { code: 500 });
      },
      async setPodPhase() {},
      async deletePod(_ns, name) {
        if (landed.has(`delete ${name}`))
          throw Object.assign(new Error('HTTP-Code: 404'), { code: 404 });
        landed.add(`delete ${name}`);
        throw Object.assign(new Error('HTTP-Code: 500'), { code: 500 });
      },
    };
    const driver = new WorkloadDriver({ api, plan, clock, random: () => 0.5 });
    await driver.run();
    expect(driver.counters).to.include({ created: 2, completed: 1, deleted: 2, already: 0 });
  });

  it('gives up after maxAttempts and at once on permanent errors', async () => {
    const clock = virtualClock();
    const api = new FakeApi(clock);
    api.failures = [
      { kind: 'create', status: 503, times: 3 },
      { kind: 'delete', status: 403, times: 1 },
    ];
    const driver = new WorkloadDriver({
      api,
      plan,
      clock,
      concurrency: 1,
      maxAttempts: 3,
      random: () => 0.5,
    });
    await driver.run();
    expect(driver.counters.failed).to.equal(2);
    expect(driver.counters.retries).to.equal(2);
  });

  it("keeps one pod's actions in order under concurrency and stops cleanly", async () => {
    const gates: (() => void)[] = [];
    const order: string[] = [];
    let inflight = 0;
    let peak = 0;
    const slow = (label: string) =>
      new Promise<void>((resolve) => {
        inflight += 1;
        peak = Math.max(peak, inflight);
        gates.push(() => {
          inflight -= 1;
          order.push(label);
          resolve();
        });
      });
    const api: PodApi = {
      createPod: (p) => slow(`create ${p.metadata!.name}`),
      setPodPhase: (_n, name) => slow(`complete ${name}`),
      deletePod: (_n, name) => slow(`delete ${name}`),
    };
    const clock = virtualClock();
    const driver = new WorkloadDriver({ api, plan, clock, concurrency: 2 });
    const done = driver.run();
    for (let i = 0; i < 5; i += 1) {
      await new Promise((r) => setImmediate(r));
      gates.shift()?.();
    }
    await done;
    expect(peak).to.be.at.most(2);
    expect(order.indexOf('create job-0-1')).to.be.below(order.indexOf('complete job-0-1'));
    expect(order.indexOf('complete job-0-1')).to.be.below(order.indexOf('delete job-0-1'));

    // stop() during a long wait ends the run without further calls.
    const real = new WorkloadDriver({
      api: new FakeApi(clock),
      plan: planScenario(
        parseScenario({ name: 'late', durationSeconds: 100, steps: [{ at: 90, create: 1 }] }),
        ['n'],
      ),
    });
    const running = real.run();
    await new Promise((r) => setTimeout(r, 10));
    await real.stop();
    await running;
    expect(real.counters.created).to.equal(0);
  });
});
