import { expect } from 'chai';
import {
  comparedPolicies,
  comparisonTable,
  formatComparison,
  runComparison,
  UnknownPolicyError,
  type Comparison,
} from '../../src/sim/compare.ts';
import { renderComparisonHtml, stepPath, window } from '../../src/sim/report/html.ts';
import { parseTraceCsv } from '../../src/sim/trace.ts';

const scaler = {
  batchSize: 16,
  requestThresholdPercent: 50,
  releaseThresholdPercent: 150,
  maxIPCount: 250,
};

// Ten minutes: flapping on a batch boundary, a burst, a quiet end.
const csv = [
  '0,4',
  ...Array.from({ length: 30 }, (_, i) => `${10 + i * 10},${i % 2 ? 25 : 24}`),
  '320,90',
  '420,10',
];
const trace = parseTraceCsv(csv.join('\n'), 'small.csv');

describe('sim/compare and the HTML report', function () {
  this.timeout(60_000);
  let c: Comparison;
  before(async () => {
    c = await runComparison({ trace, scaler, fulfilDelaySeconds: 2 });
  });

  it('runs every policy on the trace, CNS v2 first, peers described with their source', () => {
    expect(c.rows.map((r) => r.policy)).to.deep.equal(comparedPolicies(scaler).map((p) => p.name));
    expect(c.rows[0]!.policy).to.equal('cns-v2');
    for (const p of ['cns-v1', 'cilium-like', 'aws-like']) {
      expect(c.rows.find((r) => r.policy === p)!.description).to.match(/^model of .*\(.+\)$/);
    }
    // CNS v1 steps one batch at a time: the burst to 90 pods costs it more writes than CNS v2.
    const v1 = c.rows.find((r) => r.policy === 'cns-v1')!.summary;
    expect(v1.podWaitMaxSeconds).to.be.greaterThan(c.rows[0]!.summary.podWaitMaxSeconds);
  });

  it('the table has the figures of each run and ratios to CNS v2', () => {
    const table = comparisonTable(c);
    for (const [i, r] of table.entries()) {
      const s = c.rows[i]!.summary;
      expect(r).to.include({
        policy: c.rows[i]!.policy,
        writes: s.nncWrites,
        churn: s.ipsAllocated + s.ipsReleased,
        idleIpSeconds: s.idleIpSeconds,
        podWaitP99Seconds: s.podWaitP99Seconds,
      });
    }
    expect(table[0]).to.include({ writesRatio: 1, churnRatio: 1, idleRatio: 1 });
    const auto = table.find((r) => r.policy === 'auto')!;
    expect(auto.writesRatio).to.equal(Math.round((auto.writes / table[0]!.writes) * 100) / 100);
    const text = formatComparison(c);
    // The table, then one line per policy that keeps an idle account (auto).
    const accounts = c.rows.filter((r) => r.account !== undefined).length;
    expect(accounts).to.equal(c.rows.some((r) => r.policy === 'auto') ? 1 : 0);
    expect(text.split('\n')).to.have.length(2 + c.rows.length + accounts);
    expect(text).to.match(
      /auto's own account \(live, against CNS v2 computed from the same demand\): idle [\d,]+ vs [\d,]+ IP-s/,
    );
    expect(text).to.match(/^comparison: small\.csv/);
  });

  it('the page is self-contained, its table matches the comparison, every policy has its three series', () => {
    const html = renderComparisonHtml(c);
    expect(html).to.match(/^<!doctype html>/);
    expect(html).not.to.match(/<script|<link|@import|url\(/i);
    // The only URL is the SVG namespace.
    expect(
      html.match(/https?:\/\/[^"\s<]+/g)!.every((u) => u === 'http://www.w3.org/2000/svg'),
    ).to.equal(true);
    const table = comparisonTable(c);
    for (const row of table) {
      const tr = new RegExp(`<tr data-policy="${row.policy}"[^>]*>(.*?)</tr>`).exec(html);
      expect(tr, row.policy).to.not.equal(null);
      const cell = (field: string): string =>
        new RegExp(`<td data-field="${field}">([^<]*)</td>`).exec(tr![1]!)![1]!;
      expect(Number(cell('writes'))).to.equal(row.writes);
      expect(Number(cell('churn'))).to.equal(row.churn);
      expect(Number(cell('idleIpSeconds'))).to.equal(row.idleIpSeconds);
      expect(cell('podWaitP99Seconds')).to.equal(`${row.podWaitP99Seconds} s`);
      expect(cell('idleRatio')).to.equal(row.idleRatio.toFixed(2));
      const figure = new RegExp(`<figure data-policy="${row.policy}">(.*?)</figure>`, 's').exec(
        html,
      );
      expect(figure, row.policy).to.not.equal(null);
      for (const series of ['demand', 'requested', 'allocated']) {
        const d = new RegExp(`<path data-series="${series}" d="([^"]*)"`).exec(figure![1]!);
        expect(d?.[1], `${row.policy} ${series}`).to.match(/^M[\d.]+,[\d.]+/);
      }
    }
  });

  it('a step path keeps every peak of a long timeline in a few points per pixel', () => {
    const samples = Array.from({ length: 10_000 }, (_, i) => ({
      t: i,
      demand: i === 5_000 ? 200 : i % 2,
      requested: 0,
      allocated: 0,
    }));
    const d = stepPath(
      samples,
      'demand',
      (t) => t / 100,
      (v) => 200 - v,
      10_000,
    );
    expect(d.length).to.be.lessThan(10_000);
    expect(d).to.include('V0.0'); // the one-sample peak of 200 is drawn
  });

  it('a close-up starts with the values in force at its start', () => {
    const samples = [0, 10, 20, 30].map((t) => ({ t, demand: t, requested: t, allocated: t }));
    expect(window(samples, 15, 25).map((s) => [s.t, s.demand])).to.deep.equal([
      [15, 10],
      [20, 20],
    ]);
  });

  it('an unknown policy is a clear error; delay-Ns works for any N', async () => {
    await runComparison({ trace, scaler, fulfilDelaySeconds: 2, only: ['nope'] }).then(
      () => expect.fail('should have thrown'),
      (err: unknown) => {
        expect(err).to.be.instanceOf(UnknownPolicyError);
        expect((err as Error).message).to.match(/unknown policy "nope" \(one of cns-v2, cns-v1/);
      },
    );
    const d = await runComparison({ trace, scaler, fulfilDelaySeconds: 2, only: ['delay-45s'] });
    expect(d.rows.map((r) => r.policy)).to.deep.equal(['delay-45s']);
  });
});
