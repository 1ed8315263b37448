// `bin/pool-monitor embedded --netns` as a user runs it, as root with the
// reference plugins, dual-stack and IPv6-only (--ip-family): two nodes,
// each a network namespace whose uplink is a port of one bridge, every pod
// a namespace of its own configured by the real macvlan plugin with
// pool-monitor-cni as its IPAM (README "On any cluster"). While it serves,
// the pods' status IPs (one per family, IPv4 first) are the addresses on
// their namespaces' eth0, pods ping each other in each family on a node
// and across the nodes, and the nodes have no route but the connected ones
// of their pm0; SIGTERM ends it with a report where every pod started was
// configured and answered pings in each family from its node and from the
// other, and nothing is left behind (namespaces, veths). IPv4 alone runs
// the same code with one family fewer.
// Elsewhere one line says it was skipped and why; a user without root gets
// a clear error (checked whenever setpriv can drop root).
import { expect } from 'chai';
import { BIN, startEmbedded } from '../support/embedded-process.ts';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { EmbeddedReport } from '../../harness/embedded/run.ts';
import { whyNoNetns } from '../../harness/embedded/node-networks.ts';

const sh = (cmd: string, args: string[]): string =>
  execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const namespaces = (): string[] =>
  sh('ip', ['netns', 'list'])
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter(Boolean);
/** Links of the host's own namespace that a leak of the run would show as. */
const hostLinks = (): string[] =>
  sh('ip', ['-o', 'link', 'show'])
    .split('\n')
    .map((l) => l.split(': ')[1]?.split('@')[0] ?? '')
    .filter((n) => /^(veth|cni0|fab)/.test(n));

async function until(what: string, ok: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('embedded --netns: the real plugin chain for every pod, in real namespaces (e2e)', function () {
  this.timeout(150_000);
  let work: string;

  before(function () {
    const why = whyNoNetns();
    if (why) {
      console.log(`    skipped: embedded --netns needs root and the reference CNI plugins: ${why}`);
      this.skip();
    }
    work = mkdtempSync(join(tmpdir(), 'embedded-netns-'));
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The global addresses of a namespace's interface, IPv4 first (`ip -o addr`). */
  const addressesOn = (ns: string, dev: string): string[] => {
    const out = sh('ip', ['-n', ns, '-o', 'addr', 'show', 'dev', dev]);
    const of = (kind: string) =>
      [...out.matchAll(new RegExp(`${kind} (\\S+)/\\d+ .*scope global`, 'g'))].map((m) => m[1]!);
    return [...of('inet'), ...of('inet6')];
  };
  const ping = (ns: string, ip: string): boolean => {
    try {
      sh('ip', [
        'netns',
        'exec',
        ns,
        'ping',
        ip.includes(':') ? '-6' : '-4',
        '-c',
        '1',
        '-W',
        '3',
        ip,
      ]);
      return true;
    } catch {
      return false;
    }
  };

  for (const family of ['dual', 'ipv6'] as const)
    it(`--ip-family ${family}: configures, pings and reports every pod on two nodes, and leaves nothing behind after SIGTERM`, async () => {
      const scenario = join(work, `small-${family}.yaml`);
      writeFileSync(
        scenario,
        [
          `name: netns-${family}`,
          'durationSeconds: 12',
          'nodes: 2',
          'steps:',
          '  - { at: 0, create: 3, group: web }',
          '  - { at: 2, create: 2, over: 2, group: job }',
          '  - { at: 6, delete: all, over: 1, group: job }',
          '',
        ].join('\n'),
      );
      const families = family === 'dual' ? ['inet', 'inet6'] : ['inet6'];
      const linksBefore = hostLinks();
      const reportFile = join(work, `report-${family}.json`);
      const run = startEmbedded(
        [
          ...['--netns', '--nodes', '2', '--scenario', scenario, '--ip-family', family],
          ...['--serve', '--report', reportFile],
        ],
        { ...process.env, XDG_STATE_HOME: work },
      );
      const prefix = `pm${run.child.pid}-`;
      try {
        await until(
          '"scenario done; serving"',
          () => run.stdout().includes('scenario done; serving') || run.child.exitCode !== null,
          100_000,
        );
        expect(run.child.exitCode, run.stdout() + run.stderr()).to.equal(null);
        // The pods' status IPs are the addresses the chain put on their eth0: one of each family.
        const kubeconfig = /\(kubeconfig (\S+)\)/.exec(run.stdout())![1]!;
        const kc = new KubeConfig();
        kc.loadFromFile(kubeconfig);
        const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'workload' });
        expect(pods.items).to.have.length(6);
        const statusIps = pods.items.map((p) => (p.status?.podIPs ?? []).map((i) => i.ip));
        for (const ips of statusIps) {
          expect(ips, 'status.podIPs').to.have.length(families.length);
          if (family === 'dual') expect(ips[0], 'IPv4 first').to.match(/^10\./);
          expect(ips.at(-1)).to.match(/^fd00:10:240::/);
        }
        // The deleted pods' DELs may still be under way: their namespaces go with them.
        const podNs = (): string[] =>
          namespaces().filter((ns) => ns.startsWith(prefix) && /-p\d+$/.test(ns));
        await until('one namespace per running pod', () => podNs().length === 6, 30_000);
        expect(namespaces()).to.include.members([`${prefix}n0`, `${prefix}n1`, `${prefix}fabric`]);
        const onEth0 = new Map(podNs().map((ns) => [addressesOn(ns, 'eth0').join(' '), ns]));
        expect([...onEth0.keys()].sort()).to.deep.equal(
          statusIps.map((ips) => ips.join(' ')).sort(),
        );
        // Pods ping each other in every family, on a node and across the nodes.
        const byNode = (node: string) =>
          pods.items
            .filter((p) => p.spec?.nodeName === node)
            .map((p) => {
              const ips = (p.status?.podIPs ?? []).map((i) => i.ip);
              return { ips, ns: onEth0.get(ips.join(' '))! };
            });
        const [a, b] = [byNode('node-0'), byNode('node-1')];
        expect(a.length + b.length).to.equal(6);
        expect(a.length, 'pods on node-0').to.be.at.least(2);
        expect(b.length, 'pods on node-1').to.be.at.least(1);
        for (const [from, to, where] of [
          [a[0]!, a[1]!, 'on node-0'],
          [a[1]!, b[0]!, 'node-0 to node-1'],
          [b[0]!, a[0]!, 'node-1 to node-0'],
        ] as const)
          for (const ip of to.ips) expect(ping(from.ns, ip), `${where}: ping ${ip}`).to.equal(true);
        // No route for any pod: each node has its segment's connected routes only.
        for (const node of [`${prefix}n0`, `${prefix}n1`]) {
          if (family === 'dual')
            expect(sh('ip', ['-n', node, '-4', 'route', 'show']), node).to.match(
              /^10\.240\.0\.0\/16 dev pm0 proto kernel scope link src \S+ \n$/,
            );
          else expect(sh('ip', ['-n', node, '-4', 'route', 'show']), node).to.equal('');
          const v6 = sh('ip', ['-n', node, '-6', 'route', 'show'])
            .split('\n')
            .filter((l) => l !== '' && !l.startsWith('fe80::/64 '));
          expect(v6, node).to.deep.equal([
            'fd00:10:240::/112 dev pm0 proto kernel metric 256 pref medium',
          ]);
          // The node's own IPv6 address on the segment is usable at once (nodad).
          expect(sh('ip', ['-n', node, '-6', '-o', 'addr', 'show', 'dev', 'pm0'])).to.not.match(
            /tentative/,
          );
        }
      } finally {
        run.child.kill('SIGTERM');
      }
      const code = await run.exited;
      expect(code, run.stderr()).to.equal(0);
      const report = JSON.parse(readFileSync(reportFile, 'utf8')) as EmbeddedReport;
      const n = report.netns!;
      expect(report.pods?.created).to.equal(10);
      expect(report.invariantViolations).to.equal(0);
      expect(n.configured, 'pods configured = pods started').to.equal(report.pods?.created);
      expect(n.pingedOnNode, 'pinged from their node').to.equal(n.configured);
      expect(n.pingedAcross, 'pinged from the other node').to.equal(n.configured);
      const each = { onNode: n.configured, across: n.configured };
      expect(n.pingedByFamily).to.deep.equal(
        family === 'dual' ? { IPv4: each, IPv6: each } : { IPv6: each },
      );
      expect(n).to.include({ pingFailed: 0, mismatched: 0, delFailed: 0, dadFailed: 0 });
      // Four deleted by the scenario, six torn down at the end.
      expect(n.deleted).to.equal(10);
      expect(n.leftBehind).to.deep.equal([]);
      expect(report.families).to.deep.include({
        podsWithEvery: report.families.podsServed,
        podsServed: report.podWait.count,
      });
      expect(run.stdout()).to.match(
        /pod networks \(--netns\) +10 pods configured by macvlan \(bridge mode, on eth0\) \+ pool-monitor-cni/,
      );
      expect(run.stdout()).to.match(/routing: none: the nodes' uplinks on one bridge/);
      expect(run.stdout()).to.match(
        new RegExp(
          `pings +10 pods answered from their node, 10 from another node; 0 failed \\(addresses answering: ${family === 'dual' ? 'IPv4 10 \\+ 10, ' : ''}IPv6 10 \\+ 10\\)`,
        ),
      );
      expect(
        namespaces().filter((ns) => ns.startsWith(prefix)),
        'namespaces left',
      ).to.deep.equal([]);
      expect(
        hostLinks().filter((l) => !linksBefore.includes(l)),
        'links left',
      ).to.deep.equal([]);
    });

  it('refuses a user without root, clearly', function () {
    try {
      sh('sh', ['-c', 'command -v setpriv']);
    } catch {
      return this.skip();
    }
    // The user must reach the checkout: a clone in a private directory
    // (mktemp -d, as CI makes it) is opened to others for the test (search
    // permission only, taken back after).
    const opened: { dir: string; mode: number }[] = [];
    for (let dir = dirname(BIN); dir !== dirname(dir); dir = dirname(dir)) {
      const mode = statSync(dir).mode & 0o7777;
      if ((mode & 0o001) === 0) opened.push({ dir, mode });
    }
    for (const { dir, mode } of opened) chmodSync(dir, mode | 0o001);
    let out = '';
    try {
      execFileSync(
        'setpriv',
        ['--reuid=65534', '--regid=65534', '--clear-groups', BIN, 'embedded', '--netns'],
        {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, HOME: work },
        },
      );
    } catch (err) {
      out = String((err as { stderr?: string }).stderr);
    } finally {
      for (const { dir, mode } of opened) chmodSync(dir, mode);
    }
    expect(out).to.match(/--netns: it needs root/);
  });
});
