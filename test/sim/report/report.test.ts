import { expect } from 'chai';
import fc from 'fast-check';
import { renderChart, valueAt, formatSeconds } from '../../../src/sim/report/chart.ts';
import { ProgressBar, renderProgressBar } from '../../../src/sim/report/progress.ts';
import { buildReport, renderReport } from '../../../src/sim/report/report.ts';
import { percentile, waitStats } from '../../../src/sim/report/stats.ts';
import type { Sample } from '../../../src/sim/summary.ts';

const samples: Sample[] = [
  { t: 0, demand: 0, requested: 16, allocated: 16 },
  { t: 10, demand: 20, requested: 32, allocated: 16 },
  { t: 15, demand: 20, requested: 32, allocated: 32 },
  { t: 30, demand: 5, requested: 16, allocated: 16 },
  { t: 40, demand: 5, requested: 16, allocated: 16 },
];

describe('sim/report/stats', () => {
  it('nearest-rank percentiles pick values that occurred', () => {
    const waits = [5, 10, 200, 40, 1000];
    expect(percentile(waits, 50)).to.equal(40);
    expect(percentile(waits, 95)).to.equal(1000);
    expect(percentile(waits, 20)).to.equal(5);
    expect(percentile([], 50)).to.equal(undefined);
    expect(() => percentile(waits, 0)).to.throw(
      RangeError,
      'percentile must be in (0, 100], got 0',
    );
    expect(waitStats([])).to.deep.equal({
      count: 0,
      p50Ms: null,
      p95Ms: null,
      p99Ms: null,
      maxMs: null,
      meanMs: null,
    });
    expect(waitStats([1.4, 2.6])).to.include({ count: 2, p50Ms: 1, p99Ms: 3, meanMs: 2 });
  });

  it('percentiles are ordered and bounded by min and max', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(100_000), { minLength: 1, maxLength: 200 }), (values) => {
        const s = waitStats(values);
        expect(s.p50Ms!).to.be.at.most(s.p95Ms!);
        expect(s.p95Ms!).to.be.at.most(s.p99Ms!);
        expect(s.p99Ms!).to.be.at.most(s.maxMs!);
        expect(values).to.include(s.p50Ms);
        expect(s.maxMs).to.equal(Math.max(...values));
      }),
    );
  });
});

describe('sim/report/chart', () => {
  it('renders the three series on a fixed grid', () => {
    expect(renderChart(samples, { width: 20, height: 5 })).to.deep.equal([
      '32 |     ---#######',
      '   |     **********',
      '16 |#####ooo       #####',
      '   |               *****',
      ' 0 |*****',
      '   +--------------------',
      '    0s      20s      40s',
      '    * demand  - requested  o allocated  # overlap',
    ]);
  });

  it('is 60×12 by default and every plot line keeps its width', () => {
    const lines = renderChart(samples);
    expect(lines).to.have.length(12 + 3);
    expect(lines[12]).to.equal(`   +${'-'.repeat(60)}`);
    for (const line of lines.slice(0, 12)) expect(line.length).to.be.at.most(4 + 60);
    expect(lines[13]).to.match(/^ {4}0s +20s +40s$/);
  });

  it('handles an empty or flat timeline', () => {
    const lines = renderChart([], { width: 10, height: 3 });
    expect(lines.slice(0, 4)).to.deep.equal(['1 |', '  |', '0 |##########', '  +----------']);
  });

  it('reads the step function and formats times', () => {
    expect(valueAt(samples, 12, 'allocated')).to.equal(16);
    expect(valueAt(samples, 15, 'allocated')).to.equal(32);
    expect(valueAt(samples, -1, 'demand')).to.equal(0);
    expect(formatSeconds(90)).to.equal('90s');
    expect(formatSeconds(125)).to.equal('2m05s');
  });
});

describe('sim/report/progress', () => {
  it('renders a bar with percent and time', () => {
    expect(renderProgressBar(45, 90, 10, 'burst')).to.equal('[#####.....]  50%  45s/90s  burst');
    expect(renderProgressBar(200, 90, 4)).to.equal('[####] 100%  90s/90s');
    expect(renderProgressBar(0, 0, 4)).to.equal('[####] 100%  0s/0s');
  });

  it('draws in place on a TTY and stays silent otherwise', () => {
    const written: string[] = [];
    const tty = { isTTY: true, columns: 80, write: (t: string) => written.push(t) };
    const bar = new ProgressBar(tty, { width: 4 });
    bar.update(1, 2);
    bar.done();
    expect(bar.enabled).to.equal(true);
    expect(written).to.deep.equal(['\r[##..]  50%  1s/2s\x1b[K', '\r\x1b[K']);

    const piped: string[] = [];
    const quiet = new ProgressBar({ write: (t: string) => piped.push(t) });
    quiet.update(1, 2);
    quiet.done();
    expect(quiet.enabled).to.equal(false);
    expect(piped).to.deep.equal([]);
    expect(new ProgressBar(tty, { enabled: false }).enabled).to.equal(false);
  });
});

describe('sim/report/report', () => {
  const input = {
    scenario: 'burst',
    nodes: 2,
    durationSeconds: 40,
    podWaitsMs: [5, 10, 200, 40, 1000],
    nncWrites: 7,
    samples,
    apiRequestsByVerb: { watch: 4, patch: 7, create: 30 },
    pods: { created: 30, completed: 5, deleted: 25, waitingAtEnd: 0 },
    invariantViolations: 0,
  };

  it('builds the JSON report', () => {
    const r = buildReport(input);
    expect(JSON.parse(JSON.stringify(r))).to.deep.equal({
      scenario: 'burst',
      nodes: 2,
      durationSeconds: 40,
      podWait: { count: 5, p50Ms: 40, p95Ms: 1000, p99Ms: 1000, maxMs: 1000, meanMs: 251 },
      nncWrites: 7,
      ipChurn: { allocated: 32, released: 16 },
      idleIpSeconds: 450,
      peak: { demand: 20, requested: 32, allocated: 32 },
      apiRequests: { total: 41, byVerb: { create: 30, patch: 7, watch: 4 } },
      pods: { created: 30, completed: 5, deleted: 25, waitingAtEnd: 0 },
      invariantViolations: 0,
      timeline: samples,
    });
    expect(
      buildReport({ ...input, ipChurn: { allocated: 50, released: 20 } }).ipChurn,
    ).to.deep.equal({ allocated: 50, released: 20 });
  });

  it('renders the figures as text above the chart', () => {
    const lines = renderReport(buildReport(input), { width: 20, height: 5 });
    expect(lines.slice(0, 10)).to.deep.equal([
      'Report: scenario burst, 2 nodes, 40 s',
      '  pod wait (scheduling to IP)  5 pods  p50 40 ms  p95 1000 ms  p99 1000 ms  max 1000 ms',
      '  pods                         30 created, 5 completed, 25 deleted, 0 still waiting',
      '  NNC writes                   7',
      '  IP churn                     32 allocated, 16 released',
      '  idle IP-seconds              450',
      '  peak                         demand 20, requested 32, allocated 32',
      '  API requests                 41 (create 30, patch 7, watch 4)',
      '  invariant violations         0 (all held)',
      '',
    ]);
    expect(lines[10]).to.equal('  IPs over time, all nodes');
    expect(lines[11]).to.equal('  32 |     ---#######');
    const bare = renderReport(
      buildReport({
        ...input,
        podWaitsMs: [],
        apiRequestsByVerb: {},
        pods: undefined,
        invariantViolations: undefined,
      }),
    );
    expect(bare[1]).to.equal(
      '  pod wait (scheduling to IP)  0 pods  p50 n/a  p95 n/a  p99 n/a  max n/a',
    );
    expect(bare).to.include('  API requests                 0');
    expect(bare.some((l) => l.includes('invariant'))).to.equal(false);
  });
});
