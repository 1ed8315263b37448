// The ARM client layer: retries (5xx backoff, 503 Retry-After), the NIC
// directory's list budget, token sources, settings validation.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { NetworkInterface } from '@azure/arm-network';
import { checkEndpoint } from '../../src/azure/arm/client.ts';
import { CredentialTokenSource, TokenFileSource } from '../../src/azure/arm/credentials.ts';
import { parseProviderId } from '../../src/azure/arm/ids.ts';
import { armOperationOf } from '../../src/azure/arm/operations.ts';
import { isConnectionError, retryAfterMs } from '../../src/azure/arm/policies.ts';
import type { ArmMetricsSink } from '../../src/azure/metrics.ts';
import { armErrorKind } from '../../src/azure/nic-api.ts';
import { mapVmsToNics, NicDirectory } from '../../src/azure/nic-directory.ts';
import { NodeSetupError } from '../../src/fulfiller/backend.ts';
import { validateAzureSettings } from '../../src/azure/settings.ts';
import { addNodes, clientFor, RG, startRig, SUB } from './helpers.ts';
import type { Rig } from './helpers.ts';

const headers = (h: Record<string, string>) => ({ get: (n: string) => h[n] });

function recordingMetrics() {
  const waits: Array<[string, number]> = [];
  const calls: string[] = [];
  const sink: ArmMetricsSink = {
    call: (op, code) => calls.push(`${op} ${code}`),
    throttledWait: (cause, ms) => waits.push([cause, ms]),
    allocated: () => {},
    released: () => {},
    limitReached: () => {},
    forbidden: () => {},
  };
  return { sink, waits, calls };
}

describe('ARM client layer', () => {
  let rig: Rig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('replaces the SDK retry and bearer policies; the bucket sits next to the transport', async () => {
    rig = await startRig();
    const names = clientFor(rig)
      .pipeline.getOrderedPolicies()
      .map((p) => p.name);
    expect(names).not.to.include.members(['bearerTokenAuthenticationPolicy', 'defaultRetryPolicy']);
    const order = [
      'armRetryPolicy',
      'armOperationPacingPolicy',
      'armBearerPolicy',
      'armTokenBucketPolicy',
      'armMetricsPolicy',
    ].map((n) => names.indexOf(n));
    expect(order).to.deep.equal([...order].sort((a, b) => a - b));
    expect(order[0]).to.be.at.least(0);
    expect(names.indexOf('armMetricsPolicy')).to.equal(names.length - 1);
  });

  it('retries 5xx with backoff and 503 after its Retry-After, counting every attempt', async () => {
    rig = await startRig();
    addNodes(rig, 1);
    const m = recordingMetrics();
    const client = clientFor(rig, { metrics: m.sink });
    rig.em.inject({ operation: 'NetworkInterfaces.Get', status: 500, times: 2 });
    rig.em.inject({ operation: 'NetworkInterfaces.Get', status: 503, retryAfterSeconds: 0 });
    const nic = await client.networkInterfaces.get(RG, 'node-0-nic');
    expect(nic.name).to.equal('node-0-nic');
    expect(m.calls).to.deep.equal([
      'NetworkInterfaces.Get 500',
      'NetworkInterfaces.Get 500',
      'NetworkInterfaces.Get 503',
      'NetworkInterfaces.Get 200',
    ]);
    expect(m.waits.map(([c]) => c)).to.deep.equal(['backoff', 'backoff', 'retry-after']);
  });

  it('gives up after its retries and surfaces the error (the caller backs off)', async () => {
    rig = await startRig();
    addNodes(rig, 1);
    const client = clientFor(rig, { retry: { maxRetries: 2 } });
    rig.em.inject({ operation: 'NetworkInterfaces.Get', status: 500, times: 5 });
    const err = await client.networkInterfaces.get(RG, 'node-0-nic').catch((e: unknown) => e);
    expect(err).to.include({ statusCode: 500 });
    expect(rig.em.count('NetworkInterfaces.Get')).to.equal(3);
  });

  it('parses Retry-After as seconds or a date, and the ms variants', () => {
    expect(retryAfterMs(headers({ 'retry-after': '7' }), 0)).to.equal(7000);
    expect(retryAfterMs(headers({ 'retry-after-ms': '250' }), 0)).to.equal(250);
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(retryAfterMs(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' }), now)).to.equal(
      5000,
    );
    expect(retryAfterMs(headers({ 'retry-after': 'soon' }), 0)).to.equal(undefined);
    expect(isConnectionError({ code: 'ECONNRESET' })).to.equal(true);
    expect(isConnectionError({ code: 'SubnetIsFull', statusCode: 400 })).to.equal(false);
  });

  it('classifies ARM errors: 412, SubnetIsFull both ways, 404', () => {
    expect(armErrorKind({ statusCode: 412 })).to.equal('precondition-failed');
    expect(armErrorKind({ statusCode: 400, code: 'SubnetIsFull' })).to.equal('subnet-full');
    expect(
      armErrorKind(
        new Error('The long-running operation has failed. SubnetIsFull. Subnet pods ...'),
      ),
    ).to.equal('subnet-full');
    expect(armErrorKind({ statusCode: 404 })).to.equal('not-found');
    expect(armErrorKind({ statusCode: 400, code: 'InvalidRequestFormat' })).to.equal('other');
  });

  it('names operations from method and path', () => {
    const rg = `/subscriptions/${SUB}/resourceGroups/rg/providers/Microsoft.Network`;
    expect(armOperationOf('GET', `${rg}/networkInterfaces?api-version=x`)).to.equal(
      'NetworkInterfaces.List',
    );
    expect(armOperationOf('PUT', `http://h${rg}/networkInterfaces/n`)).to.equal(
      'NetworkInterfaces.CreateOrUpdate',
    );
    expect(
      armOperationOf(
        'GET',
        `/subscriptions/s/providers/Microsoft.Network/locations/l/operations/o`,
      ),
    ).to.equal('AsyncOperation.Get');
    expect(armOperationOf('GET', `${rg}/virtualNetworks/v/usages`)).to.equal(
      'VirtualNetworks.ListUsage',
    );
    expect(armOperationOf('DELETE', `${rg}/networkInterfaces/n`)).to.equal('Other');
  });
});

describe('NIC directory', () => {
  const vm = (n: string) =>
    `/subscriptions/s/resourceGroups/RG/providers/Microsoft.Compute/virtualMachines/${n}`;
  const POD =
    '/subscriptions/s/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/v/subnets/pods';
  const nic = (name: string, vmName: string, primary?: boolean): NetworkInterface => ({
    name,
    virtualMachine: { id: vm(vmName) },
    ...(primary !== undefined ? { primary } : {}),
    ipConfigurations: [{ name: 'ipconfig1', primary: true, subnet: { id: POD } }],
  });

  it('maps each VM to its primary NIC, comparing ids without case', async () => {
    const map = mapVmsToNics([
      nic('a-1', 'a', false),
      nic('a-0', 'a', true),
      nic('b-0', 'b'),
      nic('c-0', 'c', false),
      nic('c-1', 'c', false),
    ]);
    expect(map.get(vm('a').toLowerCase())?.map((n) => n.name)).to.deep.equal(['a-1', 'a-0']);
    expect(map.get(vm('b').toLowerCase())?.map((n) => n.name)).to.deep.equal(['b-0']);
    let now = 0;
    const dir = new NicDirectory({
      list: async function* () {
        yield nic('x-0', 'x', true);
        if (now >= 60_000) yield nic('y-0', 'y', true);
      },
      now: () => now,
      podSubnetId: POD,
    });
    const found = await dir.lookup({ name: 'x', providerID: `azure://${vm('X').toUpperCase()}` });
    expect(found.name).to.equal('x-0');
    const missing = { name: 'y', providerID: `azure://${vm('y')}` };
    const err = await dir.lookup(missing).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(NodeSetupError).and.include({ reason: 'NicNotFound' });
    // y was first asked for after the first list began: one more list for it...
    expect(dir.lists).to.equal(2);
    now = 1_000;
    await dir.lookup(missing).catch(() => undefined);
    expect(dir.lists).to.equal(2); // ...then at most one a minute
    now = 60_000;
    expect((await dir.lookup(missing)).name).to.equal('y-0');
    expect(dir.lists).to.equal(3);
    const none = await dir.lookup({ name: 'z' }).catch((e: unknown) => e);
    expect(none).to.include({ reason: 'NoProviderID' });
    const vmss = await dir
      .lookup({
        name: 'v',
        providerID:
          'azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines/0',
      })
      .catch((e: unknown) => e);
    expect(vmss).to.include({ reason: 'BadProviderID' });
  });

  it('parses providerIDs', () => {
    expect(parseProviderId(`azure://${vm('n1')}`)).to.include({
      name: 'n1',
      resourceGroup: 'RG',
      subscriptionId: 's',
    });
    expect(() => parseProviderId('aws:///i-1')).to.throw(/not an Azure one/);
  });
});

describe('ARM credentials and settings', () => {
  it('a token file: clear errors that never contain a token', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'azure-cred-'));
    try {
      const path = join(dir, 'token');
      const missing = await new TokenFileSource(path).token().catch((e: Error) => e.message);
      expect(missing).to.equal(`cannot read token file ${path}: ENOENT`);
      await writeFile(path, 'two words');
      const bad = await new TokenFileSource(path).token().catch((e: Error) => e.message);
      expect(bad).to.equal(`token file ${path} does not hold one bearer token`);
      await writeFile(path, 'secret-token\n');
      expect(await new TokenFileSource(path).token()).to.equal('secret-token');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a credential: cached until 5 minutes before expiry', async () => {
    let now = 0;
    let calls = 0;
    const source = new CredentialTokenSource(
      { getToken: async () => ({ token: `t${++calls}`, expiresOnTimestamp: 3_600_000 }) },
      'https://management.azure.com/.default',
      'test',
      () => now,
    );
    expect(await source.token()).to.equal('t1');
    now = 3_600_000 - 5 * 60_000 - 1;
    expect(await source.token()).to.equal('t1');
    now += 1;
    expect(await source.token()).to.equal('t2');
  });

  it('validates the settings with the flag names', () => {
    const ok = {
      subscriptionId: SUB,
      resourceGroup: 'MC_rg',
      podSubnetId: `/subscriptions/${SUB}/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/pods`,
    };
    expect(validateAzureSettings(ok)).to.include({
      qps: 4,
      burst: 20,
      endpoint: 'https://management.azure.com',
    });
    expect(() => validateAzureSettings({ ...ok, subscriptionId: 'x' })).to.throw(
      /--azure-subscription-id/,
    );
    expect(() => validateAzureSettings({ ...ok, podSubnetId: '/subnets/x' })).to.throw(
      /--pod-subnet-id/,
    );
    expect(() => validateAzureSettings({ ...ok, endpoint: 'http://10.0.0.1:80' })).to.throw(
      /loopback/,
    );
    expect(() => validateAzureSettings({ ...ok, qps: 0 })).to.throw(/--azure-qps/);
    expect(checkEndpoint('http://127.0.0.1:8080/')).to.equal('http://127.0.0.1:8080');
  });
});
