// `bin/pool-monitor embedded --backend azure` end to end: the same demo with
// the fulfiller on its Azure backend against the ARM emulator. A short
// scenario runs clean, every NNC's IPs are its node's NIC ipConfigurations
// (the NNC ids are UUIDs, as the backend names them), and the report adds ARM
// requests by operation and status and NIC PUTs per node. Both VM layouts:
// `mixed` (--pod-subnet-id: a pod NIC, a NIC in the pod subnet, a Uniform
// scale-set instance) and `node-subnets` (no --pod-subnet-id: each NIC's own
// subnet, two subnets, a scale-set instance).
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EmbeddedReport } from '../../harness/embedded/run.ts';

const BIN = fileURLToPath(new URL('../../bin/pool-monitor', import.meta.url));

describe('embedded --backend azure end to end', function () {
  this.timeout(90_000);
  let work: string;
  before(() => (work = mkdtempSync(join(tmpdir(), 'embedded-azure-'))));
  after(() => rmSync(work, { recursive: true, force: true }));

  it('--azure-layout, --azure-timing, --azure-other-writers: only with --backend azure, one of their choices (exit 1, one line)', () => {
    const run = (args: string[]) =>
      spawnSync(BIN, ['embedded', ...args], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, XDG_STATE_HOME: work },
      });
    const cidr = run(['--azure-layout', 'node-subnets']);
    expect(cidr.status, cidr.stderr).to.equal(1);
    expect(cidr.stderr.trim().split('\n')).to.deep.equal([
      'pool-monitor: --azure-layout needs --backend azure',
    ]);
    const bad = run(['--backend', 'azure', '--azure-layout', 'flat']);
    expect(bad.status, bad.stderr).to.equal(1);
    expect(bad.stderr.trim().split('\n')).to.have.length(1);
    expect(bad.stderr).to.include('mixed, node-subnets');
    for (const flags of [['--azure-timing', 'realistic'], ['--azure-other-writers']]) {
      const alone = run(flags);
      expect(alone.status, alone.stderr).to.equal(1);
      expect(alone.stderr.trim().split('\n')).to.deep.equal([
        `pool-monitor: ${flags[0]} needs --backend azure`,
      ]);
    }
    const slow = run(['--backend', 'azure', '--azure-timing', 'slow']);
    expect(slow.status, slow.stderr).to.equal(1);
    expect(slow.stderr.trim().split('\n')).to.have.length(1);
    expect(slow.stderr).to.include('fast, realistic');
  });

  const layouts: Array<[string, RegExp]> = [
    ['mixed', /layout mixed, pod subnet 10\.240\.0\.0\/16, 4 qps, burst 20\)/],
    [
      'node-subnets',
      /layout node-subnets, no pod subnet id: each NIC's own subnet, 10\.224\.0\.0\/16 or 10\.240\.0\.0\/16, 4 qps, burst 20\)/,
    ],
  ];
  for (const [layout, banner] of layouts)
    it(`${layout}: runs a short scenario clean and reports ARM requests and NIC PUTs per node`, async () => {
      const scenario = join(work, 'short.yaml');
      writeFileSync(
        scenario,
        [
          'name: short-azure',
          'durationSeconds: 10',
          'nodes: 3',
          'steps:',
          '  - {at: 0, create: 10, over: 2}',
          '  - {at: 4, create: 20, over: 2, group: burst}',
          '  - {at: 7, delete: all, group: burst}',
          '',
        ].join('\n'),
      );
      const reportFile = join(work, `report-${layout}.json`);
      const child = spawn(
        BIN,
        [
          ...['embedded', '--backend', 'azure', '--azure-layout', layout],
          // The other writers (cloud-provider-azure every 20 s, a reimage every
          // 2 minutes) do not act in 10 s: here only the report's line is checked.
          ...(layout === 'node-subnets' ? ['--azure-other-writers'] : []),
          ...['--scenario', scenario, '--report', reportFile],
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code, err).to.equal(0);
      expect(out).to.match(banner);
      expect(out).to.match(/invariant violations\s+0 \(all held\)/);
      expect(out).to.match(/ARM requests\s+\d+ \(.*NetworkInterfaces\.CreateOrUpdate 200: \d+/);
      expect(out).to.match(
        /ARM writes, reads\s+\d+ at 4 qps, burst 20; \d+ at 10 qps, burst 50; throttled \(429\) 0/,
      );
      expect(out).to.match(/NIC PUTs per node\s+min [1-9]\d*, mean [\d.]+, max \d+/);

      const r = JSON.parse(readFileSync(reportFile, 'utf8')) as EmbeddedReport;
      expect(r.invariantViolations).to.equal(0);
      expect(r.pods).to.include({ created: 90, deleted: 60, waitingAtEnd: 0 });
      const azure = r.azure!;
      const nicPuts = azure.byOperationAndStatus['NetworkInterfaces.CreateOrUpdate 200'] ?? 0;
      const vmUpdates = azure.byOperationAndStatus['ScaleSetVMs.Update 200'] ?? 0;
      // node-2 is a Uniform scale-set instance: written through its VM, never as a NIC.
      expect(vmUpdates).to.be.greaterThan(0);
      const puts = nicPuts + vmUpdates;
      // One PUT per round: each followed by its operation's polls (it runs a
      // second: polled at once, then at its Retry-After) and the re-read.
      expect(puts).to.be.greaterThan(0);
      expect(azure.byOperationAndStatus['AsyncOperation.Get 200']).to.be.within(
        nicPuts,
        3 * nicPuts,
      );
      expect(azure.byOperationAndStatus['ComputeOperation.Get 200']).to.be.within(
        vmUpdates,
        3 * vmUpdates,
      );
      // Every node's VM of its layout, a scale-set instance (node-2), and not one refused write.
      expect(
        Object.keys(azure.byOperationAndStatus).filter((k) =>
          /(CreateOrUpdate|Update) [45]/.test(k),
        ),
      ).to.deep.equal([]);
      // One list at start, one more with the scale set's once node-2 names it.
      expect(azure.byOperationAndStatus['NetworkInterfaces.List 200']).to.equal(2);
      expect(azure.byOperationAndStatus['ScaleSetNetworkInterfaces.List 200']).to.equal(1);
      // Layout mixed adds a cordoned node no layout fits: one Warning Event
      // on its NNC, raised once, and not one ARM write for it.
      if (layout === 'mixed') {
        expect(azure.unfit).to.deep.equal({
          node: 'node-unfit',
          events: 1,
          eventCount: 1,
          armWrites: 0,
          requested: 16,
          allocated: 0,
        });
        expect(out).to.match(
          /unfit node\s+node-unfit \(no NIC in the pod subnet\): 1 NicNotInPodSubnet Warning Event \(count 1\), 0 ARM writes/,
        );
      } else {
        expect(azure.unfit).to.equal(undefined);
        expect(out).to.match(/other writers: cloud-provider-azure \(stale whole-NIC PUTs\)/);
        expect(azure.otherWriters).to.include({ removed: 0, restored: 0, lost: 0 });
        expect(out).to.match(/removed by other writers\s+0 ipConfigurations/);
      }
      expect(azure.putsPerNode.min).to.be.at.least(1);
      expect(azure.putsPerNode.mean * r.nodes).to.be.closeTo(puts, 0.05 * r.nodes);
      // Writes and reads each within their bucket: at most burst + qps × duration.
      expect(azure.writes).to.be.at.most(azure.burst + azure.qps * (r.durationSeconds + 15));
      expect(azure.reads).to.be.at.most(azure.readBurst + azure.readQps * (r.durationSeconds + 15));
    });
});
