// The --azure-* flags: environment fallbacks, a flag winning over its
// variable, clear errors for what is missing or bad.
import { expect } from 'chai';
import { Command } from 'commander';
import type { AzureFlags } from '../../src/cli/azure-options.ts';
import { azureOptions, azureSettingsFromFlags } from '../../src/cli/azure-options.ts';

const SUB = '11111111-2222-3333-4444-555555555555';
const SUBNET = `/subscriptions/${SUB}/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/pods`;
const ENV_NAMES = [
  'AZURE_SUBSCRIPTION_ID',
  'AZURE_RESOURCE_GROUP',
  'AZURE_POD_SUBNET_ID',
  'AZURE_RESOURCE_MANAGER_ENDPOINT',
];

function parse(args: string[], env: Record<string, string> = {}): AzureFlags {
  const saved = Object.fromEntries(ENV_NAMES.map((n) => [n, process.env[n]]));
  for (const n of ENV_NAMES) delete process.env[n];
  Object.assign(process.env, env);
  try {
    const cmd = new Command('x').exitOverride().configureOutput({ writeErr: () => {} });
    for (const o of azureOptions()) cmd.addOption(o);
    cmd.parse(args, { from: 'user' });
    return cmd.opts<AzureFlags>();
  } finally {
    for (const n of ENV_NAMES) {
      if (saved[n] === undefined) delete process.env[n];
      else process.env[n] = saved[n];
    }
  }
}

describe('--azure-* flags', () => {
  it('falls back to the environment; a flag wins over its variable', () => {
    const flags = parse(['--azure-resource-group', 'from-flag'], {
      AZURE_SUBSCRIPTION_ID: SUB,
      AZURE_RESOURCE_GROUP: 'from-env',
      AZURE_POD_SUBNET_ID: SUBNET,
      AZURE_RESOURCE_MANAGER_ENDPOINT: 'http://127.0.0.1:9999',
    });
    expect(azureSettingsFromFlags(flags)).to.deep.equal({
      subscriptionId: SUB,
      resourceGroup: 'from-flag',
      podSubnetId: SUBNET,
      endpoint: 'http://127.0.0.1:9999',
      qps: 4,
      burst: 20,
      readQps: 10,
      readBurst: 50,
    });
  });

  it("--pod-subnet-id is optional (node subnet layout: each NIC's own subnet)", () => {
    const flags = parse(['--azure-subscription-id', SUB, '--azure-resource-group', 'g']);
    const settings = azureSettingsFromFlags(flags);
    expect(settings).to.not.have.property('podSubnetId');
    expect(settings).to.include({ subscriptionId: SUB, resourceGroup: 'g' });
  });

  it('names what is missing or bad', () => {
    expect(() => azureSettingsFromFlags(parse([]))).to.throw(
      '--azure-subscription-id (or AZURE_SUBSCRIPTION_ID) is required with --backend azure',
    );
    expect(() => parse(['--azure-qps', '0'])).to.throw(/--azure-qps must be a number > 0/);
    expect(() => parse(['--azure-burst', '1.5'])).to.throw(/--azure-burst must be an integer >= 1/);
    const flags = parse([
      '--azure-subscription-id',
      SUB,
      '--azure-resource-group',
      'g',
      '--pod-subnet-id',
      'nope',
    ]);
    expect(() => azureSettingsFromFlags(flags)).to.throw(/--pod-subnet-id: invalid subnet id/);
    const qps = parse([
      '--azure-subscription-id',
      SUB,
      '--azure-resource-group',
      'g',
      '--pod-subnet-id',
      SUBNET,
      '--azure-qps',
      '2.5',
      '--azure-token-file',
      '/t',
    ]);
    expect(azureSettingsFromFlags(qps)).to.include({ qps: 2.5, tokenFile: '/t' });
  });
});
