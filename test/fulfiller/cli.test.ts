// `bin/pool-monitor fulfiller`'s new flags: bad values end with one clear
// line and a non-zero status, before anything connects anywhere.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { booleanOption, durationOption } from '../../src/cli/parse.ts';

const BIN = new URL('../../bin/pool-monitor', import.meta.url).pathname;
const SUB = '00000000-0000-0000-0000-000000000001';
/** Valid --backend azure flags. */
const AZURE = [
  '--azure-subscription-id',
  SUB,
  '--azure-resource-group',
  'rg',
  '--pod-subnet-id',
  `/subscriptions/${SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/pods`,
];

function fulfiller(...args: string[]): { status: number | null; stderr: string } {
  // A kubeconfig that does not exist: flag errors must come first.
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('AZURE_')) delete env[k];
  const r = spawnSync(BIN, ['fulfiller', '--kubeconfig', '/nonexistent', ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env,
  });
  return { status: r.status, stderr: r.stderr };
}

describe('bin/pool-monitor fulfiller flags', function () {
  this.timeout(60_000);

  it('parses durations as Kubernetes flags write them, and booleans', () => {
    const d = durationOption('--x');
    expect(d('15s')).to.equal(15_000);
    expect(d('500ms')).to.equal(500);
    expect(d('1.5s')).to.equal(1_500);
    expect(d('1m')).to.equal(60_000);
    expect(d('2')).to.equal(2_000);
    for (const bad of ['', '0s', '-1s', '1h', 'soon'])
      expect(() => d(bad), bad).to.throw(/--x must be a positive duration/);
    expect(booleanOption('--y')('false')).to.equal(false);
    expect(() => booleanOption('--y')('no')).to.throw(/--y must be true or false/);
  });

  for (const [args, message] of [
    [['--leader-elect', 'maybe'], /--leader-elect must be true or false/],
    [
      ['--leader-elect-lease-duration', '10s'],
      /lease duration must be greater than the renew deadline/,
    ],
    [['--listen', 'everywhere'], /--listen must be HOST:PORT/],
    [['--node-selector', 'a b c'], /invalid node selector/],
    [['--backend', 'gcp'], /--backend/],
    [['--backend', 'azure'], /--azure-subscription-id \(or AZURE_SUBSCRIPTION_ID\) is required/],
    [['--backend', 'azure', ...AZURE, '--azure-qps', '0'], /--azure-qps must be a number > 0/],
    [
      ['--backend', 'azure', ...AZURE, '--azure-endpoint', 'http://arm.example.com'],
      /--azure-endpoint: .*plain http is allowed only to a loopback address/,
    ],
    [
      ['--backend', 'azure', ...AZURE.slice(0, 4), '--pod-subnet-id', '/subscriptions/x'],
      /--pod-subnet-id: /,
    ],
  ] as Array<[string[], RegExp]>) {
    it(`${args.join(' ')}: one line, non-zero`, () => {
      const r = fulfiller(...args);
      expect(r.status).to.not.equal(0);
      expect(r.stderr).to.match(message);
      expect(r.stderr.trim().split('\n')).to.have.length(1);
    });
  }
});
