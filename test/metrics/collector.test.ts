import { expect } from 'chai';
import { KNOWN_RECONCILE_OUTCOMES, MetricsCollector } from '../../src/metrics/collector.ts';
import type { StateCounts } from '../../src/ipstore/types.ts';
import { parseProm, value } from './prom-text.ts';

const counts = (a: number, s: number, r: number, p: number): StateCounts => ({
  Available: a,
  Assigned: s,
  PendingRelease: r,
  PendingProgramming: p,
});

const CNS_GAUGES = [
  'cx_ipam_requested_ips',
  'cx_ipam_available_ips',
  'cx_ipam_pod_allocated_ips',
  'cx_ipam_pending_release_ips',
  'cx_ipam_pending_programming_ips',
  'cx_ipam_total_ips',
  'cx_ipam_max_ips',
  'cx_ipam_batch_size',
  'cx_ipam_subnet_exhaustion_state',
];

async function scrape(c: MetricsCollector) {
  return parseProm(await c.render());
}

describe('metrics collector', () => {
  it('publishes every CNS gauge as a gauge with help, from pool state and store counts', async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    c.observePool(
      {
        demand: 7,
        request: 20,
        target: 16,
        batch: 16,
        max: 250,
        exhausted: false,
        subnet: 'podnet',
        subnetCIDR: '10.240.0.0/16',
        primaryIPs: 1,
      },
      counts(10, 7, 2, 1),
    );
    const exp = await scrape(c);
    for (const name of CNS_GAUGES) {
      expect(exp.type.get(name), name).to.equal('gauge');
      expect(exp.help.get(name), name).to.be.a('string').and.not.empty;
    }
    const labels = {
      subnet: 'podnet',
      subnet_cidr: '10.240.0.0/16',
      podnet_arm_id: '',
      customer_metric: 'customer metric',
    };
    expect(value(exp, 'cx_ipam_requested_ips', labels)).to.equal(20);
    expect(value(exp, 'cx_ipam_available_ips', labels)).to.equal(10);
    expect(value(exp, 'cx_ipam_pod_allocated_ips', labels)).to.equal(7);
    expect(value(exp, 'cx_ipam_pending_release_ips', labels)).to.equal(2);
    expect(value(exp, 'cx_ipam_pending_programming_ips', labels)).to.equal(1);
    expect(value(exp, 'cx_ipam_secondary_ips', labels)).to.equal(20);
    expect(value(exp, 'cx_ipam_total_ips', labels)).to.equal(21);
    expect(value(exp, 'cx_ipam_max_ips', labels)).to.equal(250);
    expect(value(exp, 'cx_ipam_batch_size', labels)).to.equal(16);
    expect(value(exp, 'cx_ipam_current_available_ips', labels)).to.equal(11);
    expect(value(exp, 'cx_ipam_expect_available_ips', labels)).to.equal(13);
    expect(value(exp, 'cx_ipam_subnet_exhaustion_state', labels)).to.equal(0);
    expect(value(exp, 'pool_monitor_demand_ips')).to.equal(7);
    expect(value(exp, 'pool_monitor_target_ips')).to.equal(16);
  });

  it('reports exhaustion as 1 and counts observations per exhaustion state', async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    c.observePool({ exhausted: true }, counts(0, 0, 0, 0));
    c.observePool({ exhausted: true }, counts(0, 0, 0, 0));
    c.observePool({ exhausted: false }, counts(0, 0, 0, 0));
    const exp = await scrape(c);
    expect(value(exp, 'cx_ipam_subnet_exhaustion_state')).to.equal(0);
    const name = 'cx_ipam_subnet_exhaustion_state_count_total';
    expect(value(exp, name, { subnet_exhaustion_state: 'exhausted' })).to.equal(2);
    expect(value(exp, name, { subnet_exhaustion_state: 'not_exhausted' })).to.equal(1);
    c.observePool({ exhausted: true }, counts(0, 0, 0, 0));
    expect(value(await scrape(c), 'cx_ipam_subnet_exhaustion_state')).to.equal(1);
  });

  it('drops the old series when the subnet labels change', async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    c.observePool({ subnet: 'a' }, counts(1, 0, 0, 0));
    c.observePool({ subnet: 'b' }, counts(2, 0, 0, 0));
    const exp = await scrape(c);
    const series = exp.samples.filter((s) => s.name === 'cx_ipam_available_ips');
    expect(series).to.have.length(1);
    expect(series[0]?.labels.subnet).to.equal('b');
    expect(series[0]?.value).to.equal(2);
  });

  it('publishes each family of a dual-stack pool: IPv4 as CNS does, IPv6 with family="IPv6"', async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    const v4 = {
      family: 'IPv4',
      subnet: 'pods-v4',
      subnetCIDR: '10.240.0.0/16',
      primaryIPs: 1,
      exhausted: false,
      counts: counts(10, 7, 2, 1),
    };
    const single = await (async () => {
      c.observePool({ request: 20, max: 250, batch: 16, families: [v4] }, counts(0, 0, 0, 0));
      return c.render();
    })();
    c.observePool(
      {
        request: 20,
        max: 250,
        batch: 16,
        families: [
          v4,
          {
            family: 'IPv6',
            subnet: 'pods-v6',
            subnetCIDR: 'fd00:10::/112',
            primaryIPs: 1,
            exhausted: true,
            counts: counts(3, 7, 0, 0),
          },
        ],
      },
      counts(0, 0, 0, 0),
    );
    const exp = await scrape(c);
    const cns = { podnet_arm_id: '', customer_metric: 'customer metric' };
    const ipv4 = { ...cns, subnet: 'pods-v4', subnet_cidr: '10.240.0.0/16' };
    const ipv6 = { ...cns, subnet: 'pods-v6', subnet_cidr: 'fd00:10::/112', family: 'IPv6' };
    for (const name of CNS_GAUGES) {
      const series = exp.samples.filter((x) => x.name === name);
      expect(
        series.map((x) => x.labels),
        name,
      ).to.deep.equal([ipv4, ipv6]);
    }
    expect(value(exp, 'cx_ipam_available_ips', ipv4)).to.equal(10);
    expect(value(exp, 'cx_ipam_available_ips', ipv6)).to.equal(3);
    expect(value(exp, 'cx_ipam_requested_ips', ipv6)).to.equal(20);
    expect(value(exp, 'cx_ipam_expect_available_ips', ipv6)).to.equal(13);
    expect(value(exp, 'cx_ipam_subnet_exhaustion_state', ipv4)).to.equal(0);
    expect(value(exp, 'cx_ipam_subnet_exhaustion_state', ipv6)).to.equal(1);
    // The IPv4 series are the very lines a single-stack pool publishes.
    const cnsLines = (text: string) =>
      text.split('\n').filter((l) => l.startsWith('cx_ipam_') && !l.includes('family='));
    const dualLines = cnsLines(await c.render()).filter((l) => !l.includes('_count_total'));
    expect(dualLines).to.deep.equal(cnsLines(single).filter((l) => !l.includes('_count_total')));
  });

  it('counts reconciles by outcome, known outcomes present at 0 from the start', async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    let exp = await scrape(c);
    for (const outcome of KNOWN_RECONCILE_OUTCOMES) {
      expect(value(exp, 'pool_monitor_reconciles_total', { outcome })).to.equal(0);
    }
    expect(exp.type.get('pool_monitor_reconciles_total')).to.equal('counter');
    c.countReconcile('scaled');
    c.countReconcile('scaled');
    c.countReconcile('failed');
    c.countReconcile('weird outcome {with} "quotes"');
    exp = await scrape(c);
    expect(value(exp, 'pool_monitor_reconciles_total', { outcome: 'scaled' })).to.equal(2);
    expect(value(exp, 'pool_monitor_reconciles_total', { outcome: 'failed' })).to.equal(1);
    expect(value(exp, 'pool_monitor_reconciles_total', { outcome: 'other' })).to.equal(1);
  });

  it('counts NNC writes by result', async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    c.countWrite(true);
    c.countWrite(false);
    c.countWrite(false);
    const exp = await scrape(c);
    expect(value(exp, 'pool_monitor_nnc_writes_total', { result: 'success' })).to.equal(1);
    expect(value(exp, 'pool_monitor_nnc_writes_total', { result: 'failure' })).to.equal(2);
  });

  it('records node API requests as a counter and a latency histogram', async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    c.observeHttp('POST', '/network/requestipconfigs', 200, 0.002);
    c.observeHttp('POST', '/network/requestipconfigs', 400, 0.0001);
    const exp = await scrape(c);
    const route = '/network/requestipconfigs';
    const name = 'pool_monitor_node_api_requests_total';
    expect(value(exp, name, { method: 'POST', route, code: '200' })).to.equal(1);
    expect(value(exp, name, { method: 'POST', route, code: '400' })).to.equal(1);
    const hist = 'pool_monitor_node_api_request_duration_seconds';
    expect(exp.type.get(hist)).to.equal('histogram');
    expect(value(exp, `${hist}_count`, { method: 'POST', route })).to.equal(2);
    expect(value(exp, `${hist}_bucket`, { method: 'POST', route, le: '0.001' })).to.equal(1);
  });

  it('reads the pool source on every scrape', async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    let assigned = 1;
    c.setPoolSource(() => ({ observation: { request: 10 }, counts: counts(9, assigned, 0, 0) }));
    expect(value(await scrape(c), 'cx_ipam_pod_allocated_ips')).to.equal(1);
    assigned = 4;
    expect(value(await scrape(c), 'cx_ipam_pod_allocated_ips')).to.equal(4);
  });

  it("shows the release policy's idle account against CNS v2, and nothing before a policy has one", async () => {
    const c = new MetricsCollector({ defaultMetrics: false });
    c.observePool({ request: 32 }, counts(31, 1, 0, 0));
    expect(await c.render()).not.to.match(/^pool_monitor_idle_ip_seconds\{/m);
    const account = {
      budget: 1.5,
      heldIdleIpSeconds: 1200,
      cnsV2IdleIpSeconds: 1000,
      idleRatio: 1.2,
      window: { seconds: 3600, heldIdleIpSeconds: 300, cnsV2IdleIpSeconds: 250, idleRatio: 1.2 },
      budgetLeftIpSeconds: 75,
      cnsV2Writes: 40,
      cnsV2Churn: 400,
      churn: 200,
    };
    c.observePool(
      { request: 32, idleAccount: { policy: 'auto', account, writes: 12 } },
      counts(31, 1, 0, 0),
    );
    const exp = await scrape(c);
    const idle = 'pool_monitor_idle_ip_seconds';
    expect(value(exp, idle, { policy: 'auto', pool: 'held', span: 'start' })).to.equal(1200);
    expect(value(exp, idle, { policy: 'auto', pool: 'cns_v2', span: 'start' })).to.equal(1000);
    expect(value(exp, idle, { policy: 'auto', pool: 'held', span: 'window' })).to.equal(300);
    expect(value(exp, idle, { policy: 'auto', pool: 'cns_v2', span: 'window' })).to.equal(250);
    expect(value(exp, 'pool_monitor_idle_budget_ratio', { policy: 'auto' })).to.equal(1.5);
    expect(value(exp, 'pool_monitor_idle_budget_left_ip_seconds', { policy: 'auto' })).to.equal(75);
    expect(value(exp, 'pool_monitor_cns_v2_nnc_writes', { policy: 'auto' })).to.equal(40);
    expect(value(exp, 'pool_monitor_nnc_writes_saved', { policy: 'auto' })).to.equal(28);
  });

  it('keeps registries apart and collects Node defaults only when asked', async () => {
    const a = new MetricsCollector({ defaultMetrics: true, defaultLabels: { node: 'n1' } });
    const b = new MetricsCollector({ defaultMetrics: false });
    a.countWrite(true);
    const expA = await scrape(a);
    const expB = await scrape(b);
    expect(expA.type.has('process_cpu_user_seconds_total')).to.be.true;
    expect(expA.type.has('nodejs_eventloop_lag_seconds')).to.be.true;
    expect(expB.type.has('process_cpu_user_seconds_total')).to.be.false;
    expect(
      value(expA, 'pool_monitor_nnc_writes_total', { result: 'success', node: 'n1' }),
    ).to.equal(1);
    expect(value(expB, 'pool_monitor_nnc_writes_total', { result: 'success' })).to.equal(0);
  });
});
