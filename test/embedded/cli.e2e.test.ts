// End-to-end through `bin/pool-monitor embedded` as a user runs it: a real
// process, real kubectl (1.27 and 1.33) against its API server, SIGTERM, and
// the report. Scenarios are tiny YAML files so the whole file stays short.
import { expect } from 'chai';
import { startEmbedded, type EmbeddedRun } from '../support/embedded-process.ts';
import { execFile, execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { EmbeddedReport } from '../../harness/embedded/run.ts';

const work = mkdtempSync(join(tmpdir(), 'embedded-e2e-'));

function kubectlBin(): string | undefined {
  try {
    const onPath = execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim();
    const dir = dirname(realpathSync(onPath));
    return ['1.33', '1.27'].map((v) => join(dir, `kubectl.${v}`)).find((p) => existsSync(p));
  } catch {
    return undefined;
  }
}

function scenarioFile(name: string, text: string): string {
  const path = join(work, `${name}.yaml`);
  writeFileSync(path, text);
  return path;
}

function start(args: string[]): EmbeddedRun {
  // EmbeddedRun logs go to the state dir ($XDG_STATE_HOME/pool-monitor): here, the work dir.
  return startEmbedded(args, { ...process.env, XDG_STATE_HOME: work });
}

async function until<T>(what: string, fn: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('embedded: bin/pool-monitor embedded end to end', function () {
  // Liveness bounds, sized for a loaded two-core machine (make test's lanes).
  this.timeout(180_000);
  after(() => rmSync(work, { recursive: true, force: true }));

  describe('--serve with kubectl', function () {
    const kubectl = kubectlBin();
    let run: EmbeddedRun;
    let server = '';
    const k = (args: string[]): Promise<string> =>
      new Promise((resolve, reject) =>
        execFile(
          kubectl!,
          [`--server=${server}`, ...args],
          { env: { ...process.env, KUBECONFIG: '/dev/null', HOME: work } },
          (e, stdout, stderr) =>
            e ? reject(new Error(`${e.message}: ${stderr}`)) : resolve(stdout),
        ),
      );
    const requested = async (): Promise<number[]> => {
      const out = await k([
        'get',
        'nnc',
        '-n',
        'kube-system',
        '-o',
        'jsonpath={range .items[*]}{.spec.requestedIPCount}{"\\n"}{end}',
      ]);
      return out.trim().split('\n').map(Number);
    };

    before(async function () {
      if (!kubectl) this.skip();
      const scenario = scenarioFile(
        'serve',
        'name: serve\ndurationSeconds: 4\nnodes: 2\nsteps:\n  - {at: 0, create: 5, over: 1}\n',
      );
      run = start(['--scenario', scenario, '--serve', '--log-level', 'debug']);
      server = await until(
        'the API server URL',
        () =>
          /kubectl --server=(http:\/\/127\.0\.0\.1:\d+) get nnc -n kube-system/.exec(
            run.stdout(),
          )?.[1],
        60_000,
      );
      await until(
        'the serving line',
        () => (/serving on/.test(run.stdout()) ? true : undefined),
        90_000,
      );
    });

    after(() => {
      if (run && run.child.exitCode === null) run.child.kill('SIGKILL');
    });

    it('shows every NNC with kubectl get nnc -n kube-system', async () => {
      const out = await k(['get', 'nnc', '-n', 'kube-system', '-o', 'name']);
      expect(out.trim().split('\n').sort()).to.deep.equal([
        'nodenetworkconfig.acn.azure.com/node-0',
        'nodenetworkconfig.acn.azure.com/node-1',
      ]);
      // 5 pods each: 16 × ceil(0.5 + 5/16) = 16.
      expect(await requested()).to.deep.equal([16, 16]);
    });

    it("lists a node's pods with a field selector, all Running with an IP", async () => {
      const out = await k([
        'get',
        'pods',
        '-n',
        'workload',
        '--field-selector',
        'spec.nodeName=node-1',
        '-o',
        'jsonpath={range .items[*]}{.spec.nodeName} {.status.phase} {.status.podIP}{"\\n"}{end}',
      ]);
      const rows = out.trim().split('\n');
      expect(rows).to.have.length(5);
      for (const row of rows) expect(row).to.match(/^node-1 Running 10\.240\.\d+\.\d+$/);
    });

    it('prints one node API URL per node at start, and each answers /debug/pool and /readyz', async () => {
      const lines = run.stdout().split('\n');
      const urls = lines
        .map((l) => /^(node-\d+) {2}(http:\/\/127\.0\.0\.1:\d+)$/.exec(l))
        .filter((m) => m !== null)
        .map((m) => [m[1], m[2]] as const);
      expect(urls.map(([n]) => n)).to.deep.equal(['node-0', 'node-1']);
      for (const [, url] of urls) {
        const pool = (await (await fetch(`${url}/debug/pool`)).json()) as { demand: number };
        expect(pool.demand).to.equal(5);
        expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      }
      expect(run.stdout()).to.match(/kubectl --server=http:\/\/127\.0\.0\.1:\d+ get nodes/);
    });

    it('shows every node Ready with a version', async () => {
      const out = await k(['get', 'nodes', '--no-headers']);
      const rows = out.trim().split('\n');
      expect(rows).to.have.length(2);
      for (const row of rows) expect(row).to.match(/^node-\d+\s+Ready\s+<none>\s+\S+\s+v1\.\d+/);
    });

    it('runs a pod made with kubectl run: scheduled, Running with a pod IP in seconds', async () => {
      await k(['run', 'plain', '--image=nginx', '--restart=Never']);
      let row = '';
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline) {
        row = await k([
          'get',
          'pod',
          'plain',
          '-o',
          'jsonpath={.spec.nodeName} {.status.phase} {.status.podIP}',
        ]);
        if (/Running/.test(row)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(row).to.match(/^node-\d Running 10\.240\.\d+\.\d+$/);
    });

    it('a CSS marked exhausted through its status subresource scales with batch 1, buffer 1', async () => {
      const names = (await k(['get', 'css', '-n', 'kube-system', '-o', 'name'])).trim().split('\n');
      expect(names).to.have.length(1);
      await k([
        'patch',
        names[0]!,
        '-n',
        'kube-system',
        '--subresource',
        'status',
        '--type',
        'merge',
        '-p',
        '{"status":{"exhausted":true}}',
      ]);
      // Exhausted: target = 1 × ceil(1 + demand/1) = demand + 1 on each node:
      // 5 workload pods each, and the kubectl pod on one of them.
      const deadline = Date.now() + 15_000;
      let seen: number[] = [];
      while (Date.now() < deadline) {
        seen = await requested();
        if (seen.slice().sort().join() === '6,7') break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(seen.slice().sort()).to.deep.equal([6, 7]);
    });

    it('SIGTERM ends it with exit 0 and prints the report', async () => {
      run.child.kill('SIGTERM');
      const code = await run.exited;
      expect(code, run.stderr()).to.equal(0);
      expect(run.stdout()).to.match(/Report: scenario serve, 2 nodes/);
      expect(run.stdout()).to.match(/pod wait \(scheduling to IP\)\s+11 pods/);
      expect(run.stdout()).to.match(/invariant violations\s+0 \(all held\)/);
      expect(run.stdout()).to.match(/subnet exhaustion\s+yes/);
    });
  });

  it('runs a short scenario to completion with zero violations and a sane JSON report', async () => {
    const scenario = scenarioFile(
      'short',
      [
        'name: short',
        'durationSeconds: 12',
        'nodes: 2',
        'steps:',
        '  - {at: 0, create: 10, over: 2}',
        '  - {at: 5, create: 20, over: 2, group: burst}',
        '  - {at: 8, delete: all, group: burst}',
        '',
      ].join('\n'),
    );
    const reportFile = join(work, 'short.json');
    const logFile = join(work, 'short.log');
    const run = start(['--scenario', scenario, '--report', reportFile, '--log-file', logFile]);
    const code = await run.exited;
    expect(code, run.stderr()).to.equal(0);
    expect(run.stdout()).to.not.include('\r'); // no progress bar without a TTY
    const r = JSON.parse(readFileSync(reportFile, 'utf8')) as EmbeddedReport;
    expect(r.scenario).to.equal('short');
    expect(r.nodes).to.equal(2);
    expect(r.invariantViolations).to.equal(0);
    expect(r.violations).to.deep.equal([]);
    expect(r.pods).to.include({ created: 60, deleted: 40, waitingAtEnd: 0 });
    // Every pod served, unless the workload deleted it first (a slow machine).
    expect(r.podWait.count + r.pods!.endedWaiting!).to.equal(60);
    expect(r.podWait.p50Ms).to.be.a('number').within(0, 10_000);
    expect(r.podWait.p99Ms).to.be.at.least(r.podWait.p50Ms ?? 0);
    expect(r.nncWrites).to.be.within(2, 200);
    expect(r.ipChurn.allocated).to.be.at.least(60);
    expect(r.peak.demand).to.equal(60);
    expect(r.peak.allocated).to.be.at.least(60);
    expect(r.scaling).to.deep.equal({ up: true, down: true });
    expect(r.exhaustion.happened).to.equal(false);
    expect(r.apiRequests.byVerb.create).to.be.at.least(60);
    expect(r.apiRequests.byVerb.patch).to.be.at.least(r.nncWrites);
    expect(r.timeline.length).to.be.at.least(10);
    expect(r.idleIpSeconds).to.be.greaterThan(0);

    // Logs say whom they are about: every line of a node's sidecar and
    // kubelet carries its node, and so does every fulfiller line about a node.
    const lines = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { component: string; msg: string; node?: string });
    const perNode = ['sidecar', 'monitor', 'nodeapi', 'informers', 'kubelet', 'sim-kubelet'];
    const nodeLines = lines.filter((l) => perNode.includes(l.component));
    expect(nodeLines.length).to.be.greaterThan(20);
    expect(nodeLines.filter((l) => !/^node-[01]$/.test(l.node ?? ''))).to.deep.equal([]);
    const fulfillerAboutNodes = lines.filter(
      (l) => l.component === 'fulfiller' && /^node /.test(l.msg),
    );
    expect(fulfillerAboutNodes.length).to.be.greaterThan(0);
    expect(fulfillerAboutNodes.filter((l) => !l.node)).to.deep.equal([]);
    // A healthy start is not a failure: no NNC warnings.
    expect(lines.filter((l) => /ignoring NodeNetworkConfig/.test(l.msg))).to.deep.equal([]);
  });

  for (const family of ['dual', 'ipv6'] as const)
    it(`--ip-family ${family}: every pod served with one address of each family, no violation`, async () => {
      const scenario = scenarioFile(
        `family-${family}`,
        [
          `name: family-${family}`,
          'durationSeconds: 10',
          'nodes: 2',
          'steps:',
          '  - {at: 0, create: 10, over: 2}',
          '  - {at: 4, create: 16, over: 2, group: burst}',
          '  - {at: 7, delete: all, group: burst}',
          '',
        ].join('\n'),
      );
      const reportFile = join(work, `family-${family}.json`);
      const run = start(['--scenario', scenario, '--ip-family', family, '--report', reportFile]);
      expect(await run.exited, run.stderr()).to.equal(0);
      const r = JSON.parse(readFileSync(reportFile, 'utf8')) as EmbeddedReport;
      expect(r.invariantViolations).to.equal(0);
      expect(r.violations).to.deep.equal([]);
      expect(r.pods).to.include({ created: 52, waitingAtEnd: 0 });
      const served = r.podWait.count;
      expect(served + r.pods!.endedWaiting!).to.equal(52);
      const v6 = 'fd00:10:240::/112';
      if (family === 'dual') {
        expect(r.families).to.deep.include({
          ipFamily: 'dual',
          subnets: ['10.240.0.0/16', v6],
          podsServed: served,
          podsWith: { IPv4: served, IPv6: served },
          podsWithEvery: served,
        });
        expect(r.families.peakAddresses.IPv4).to.be.at.least(52);
        expect(r.families.peakAddresses.IPv6).to.equal(r.families.peakAddresses.IPv4);
        expect(run.stdout()).to.include(`pod subnets 10.240.0.0/16 and ${v6} (dual-stack)`);
        expect(run.stdout()).to.match(
          new RegExp(
            `address families +dual-stack \\(10\\.240\\.0\\.0/16, ${v6}\\): ${served} pods served, ${served} with IPv4, ${served} with IPv6 \\(${served} with both\\)`,
          ),
        );
      } else {
        expect(r.families).to.deep.include({
          ipFamily: 'ipv6',
          subnets: [v6],
          podsServed: served,
          podsWith: { IPv6: served },
          podsWithEvery: served,
        });
        expect(r.families.peakAddresses).to.have.keys(['IPv6']);
        expect(r.podSubnet).to.equal(v6);
      }
      // The timeline counts the pool in pods: a pod takes one address of each family.
      expect(r.peak.allocated).to.be.at.least(52).and.at.most(r.peak.requested);
    });

  it('does the actions planned for its last second: deletes at the end are done, not cut off', async () => {
    const scenario = scenarioFile(
      'last-second',
      [
        'name: last-second',
        'durationSeconds: 3',
        'nodes: 1',
        'steps:',
        '  - {at: 0, create: 80, over: 2}',
        // 80 deletes at once, at the last moment: more than the workload's
        // 32 calls in flight, so most of them are still queued when the time is up.
        '  - {at: 3, delete: all}',
        '',
      ].join('\n'),
    );
    const reportFile = join(work, 'last-second.json');
    const run = start(['--scenario', scenario, '--report', reportFile]);
    expect(await run.exited, run.stderr()).to.equal(0);
    const r = JSON.parse(readFileSync(reportFile, 'utf8')) as EmbeddedReport;
    expect(r.pods).to.include({ created: 80, deleted: 80, waitingAtEnd: 0 });
    expect(r.invariantViolations).to.equal(0);
  });

  it('leaks (--leak-rate, a lost store): every dropped DEL reclaimed, the store rebuilt, no violation', async () => {
    const scenario = scenarioFile(
      'leaky-short',
      [
        'name: leaky-short',
        'durationSeconds: 16',
        'nodes: 2',
        'steps:',
        '  - {at: 0, create: 10, over: 2}',
        '  - {at: 1, create: 6, over: 1, group: job}',
        '  - {at: 7, complete: all, over: 1, group: job}',
        '  - {at: 8, delete: 4, over: 1}',
        'leaks: {graceSeconds: 2, loseStore: [{at: 4, nodes: [0]}]}',
        '',
      ].join('\n'),
    );
    const reportFile = join(work, 'leaky.json');
    const run = start(['--scenario', scenario, '--leak-rate', '0.5', '--report', reportFile]);
    expect(await run.exited, run.stderr()).to.equal(0);
    const r = JSON.parse(readFileSync(reportFile, 'utf8')) as EmbeddedReport;
    expect(r.invariantViolations).to.equal(0);
    const leaks = r.leaks!;
    expect(leaks).to.include({ dropReleaseRate: 0.5, graceSeconds: 2, stillLeaked: 0 });
    expect(leaks.releasesDropped).to.be.above(0);
    expect(leaks.reclaimed['pod-deleted'] + leaks.reclaimed['pod-completed']).to.be.at.least(
      leaks.releasesDropped,
    );
    expect(leaks.storeLosses).to.have.length(1);
    const [lost] = leaks.storeLosses;
    expect(lost!.node).to.equal('node-0');
    expect(lost!.missing).to.deep.equal([]);
    expect(lost!.runningPods).to.be.above(0);
    expect(lost!.held).to.equal(lost!.addresses);
    expect(leaks.adopted).to.be.at.least(lost!.addresses);
    expect(run.stdout()).to.match(/leaked IPs\s+\d+ CNI DELs dropped .*, 0 still leaked/);
    expect(run.stdout()).to.match(/lost stores\s+1 lost, 1 rebuilt from the pods/);
  });

  describe('bad input: one line on stderr, non-zero exit, nothing started', () => {
    const bad = scenarioFile(
      'bad',
      'name: bad\ndurationSeconds: 5\nsteps:\n  - {at: 0, creat: 1}\n',
    );
    const cases: [string, string[], RegExp][] = [
      ['--nodes 0', ['--nodes', '0'], /--nodes must be an integer >= 1/],
      ['--duration -3', ['--duration', '-3'], /--duration/],
      ['--api-port 70000', ['--api-port', '70000'], /--api-port/],
      ['--log-level loud', ['--log-level', 'loud'], /--log-level/],
      ['--leak-rate 2', ['--leak-rate', '2'], /--leak-rate must be a share from 0 to 1/],
      ['--ip-family ipv5', ['--ip-family', 'ipv5'], /--ip-family.*ipv4, ipv6, dual/],
      [
        '--ip-family dual --backend azure',
        ['--ip-family', 'dual', '--backend', 'azure'],
        /--ip-family dual: the embedded Azure emulator has no dual-stack pod subnet yet/,
      ],
      ['unknown flag', ['--frobnicate'], /unknown option/],
      ['unknown scenario', ['--scenario', 'nope'], /unknown scenario "nope"/],
      ['bad scenario file', ['--scenario', bad], /steps\[0\]\.creat: unknown field/],
    ];
    for (const [name, args, message] of cases) {
      it(name, async () => {
        const run = start(args);
        const code = await run.exited;
        expect(code).to.not.equal(0);
        const lines = run.stderr().trim().split('\n');
        expect(lines, run.stderr()).to.have.length(1);
        expect(lines[0]).to.match(message);
        expect(run.stdout()).to.equal('');
      });
    }
  });
});
