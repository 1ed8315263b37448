// Scale sets on the strict emulator through the real SDKs: a Uniform
// instance's NIC is written through its scale-set VM's network profile
// (@azure/arm-compute, If-Match on the VM's etag, the operation followed),
// never directly; a Flexible instance is a standalone VM with its own NIC.
import { expect } from 'chai';
import { OTHER_TENANT_SUBSCRIPTION } from '../../harness/azure-emulator/authorization.ts';
import { ROLE_ROWS } from '../../src/azure/arm/actions.ts';
import { parseProviderId } from '../../src/azure/arm/ids.ts';
import { AzureBackend } from '../../src/azure/backend.ts';
import { sdkNicApi } from '../../src/azure/nic-api.ts';
import { NodeSetupError } from '../../src/fulfiller/backend.ts';
import { addInstance, clientFor, computeClientFor, RG, startRig, SUB, TOKEN } from './helpers.ts';
import type { Rig } from './helpers.ts';

const ASG = `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/applicationSecurityGroups/pool`;

function backendFor(rig: Rig, extra: { minRelistMs?: number } = {}) {
  return new AzureBackend({
    api: sdkNicApi(clientFor(rig), RG, 10, computeClientFor(rig)),
    podSubnetId: rig.podSubnetId,
    ...extra,
  });
}

describe('Azure backend: scale sets (real SDKs, strict emulator)', function () {
  this.timeout(30_000);
  let rig: Rig;
  afterEach(async () => rig?.close());

  it('parses both providerID forms: a Uniform instance, a Flexible one (a VM)', () => {
    const uniform = parseProviderId(
      `azure:///subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/3`,
    );
    expect(uniform).to.deep.include({
      name: 'pool_3',
      scaleSet: { name: 'pool', instanceId: '3' },
    });
    const flexible = parseProviderId(
      `azure:///subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachines/pool_1a2b3c4d`,
    );
    expect(flexible.scaleSet).to.equal(undefined);
  });

  it('a Uniform instance: adds and releases through the scale-set VM, never a NIC PUT', async () => {
    rig = await startRig({ operationMs: 20, pollRetryAfterSeconds: 0 });
    const vm = addInstance(rig, { asgIds: [ASG] });
    const backend = backendFor(rig);
    await backend.start();
    const node = { name: 'pool000000', providerID: vm.providerID };
    const first = await backend.applyNic(node, { add: 8, remove: [] });
    expect(first.held.ipAssignments).to.have.length(8);
    expect(first.held.nodeIP).to.equal('10.240.0.4');
    const nic = rig.em.network.getScaleSetNic(RG, 'pool', '0', vm.nicName)!;
    const configs = nic.properties!.ipConfigurations as Array<{
      properties: Record<string, unknown>;
    }>;
    expect(configs).to.have.length(10);
    for (const c of configs)
      expect(c.properties.applicationSecurityGroups).to.deep.equal([{ id: ASG }]);
    const { held } = await backend.applyNic(node, {
      container: {
        id: 'nc',
        primaryIP: first.held.primaryIP,
        ipAssignments: first.held.ipAssignments,
      },
      add: 0,
      remove: first.held.ipAssignments.slice(0, 3),
    });
    expect(held.ipAssignments).to.have.length(5);
    await backend.releaseAll(node, []);
    const after = rig.em.network.getScaleSetNic(RG, 'pool', '0', vm.nicName)!;
    expect(after.properties!.ipConfigurations).to.have.length(1);
    expect(rig.em.count('ScaleSetVMs.Update')).to.equal(3);
    expect(rig.em.count('ComputeOperation.Get')).to.be.at.least(3);
    expect(rig.em.count('NetworkInterfaces.CreateOrUpdate')).to.equal(0);
    expect(rig.em.network.subnet(rig.podSubnetId)!.inUse).to.equal(1);
  });

  it('a Uniform instance changed behind our back: 412 on the VM, re-read, written again', async () => {
    rig = await startRig();
    const vm = addInstance(rig, { instanceId: '1' });
    const backend = backendFor(rig);
    const node = { name: 'n', providerID: vm.providerID };
    const first = await backend.applyNic(node, { add: 2, remove: [] });
    rig.em.inject({ operation: 'ScaleSetVMs.Update', status: 412 });
    const { held } = await backend.applyNic(node, {
      container: {
        id: 'nc',
        primaryIP: first.held.primaryIP,
        ipAssignments: first.held.ipAssignments,
      },
      add: 2,
      remove: [],
    });
    expect(held.ipAssignments).to.have.length(4);
    expect(backend.stats.preconditionFailed).to.equal(1);
  });

  it('the update sends only the network profile and If-Match: the VM as read, sent whole, is refused on its image and identity', async () => {
    rig = await startRig({ operationMs: 0 });
    const vm = addInstance(rig);
    const asRead = rig.em.network.getScaleSetVm(RG, 'pool', '0')!;
    const props = asRead.properties as Record<string, { imageReference?: { id: string } }>;
    expect(props.storageProfile!.imageReference!.id).to.include(OTHER_TENANT_SUBSCRIPTION);
    expect(asRead.identity).to.have.property('type', 'UserAssigned');
    expect(props).to.have.property('osProfile');
    const put = (body: unknown) =>
      fetch(`${rig.em.endpoint}${vm.vmId}?api-version=2024-07-01`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    // The whole VM: its gallery image is in another tenant's subscription.
    const whole = await put(asRead);
    expect(whole.status).to.equal(403);
    const refused = (await whole.json()) as { error: { code: string; message: string } };
    expect(refused.error.code).to.equal('LinkedAuthorizationFailed');
    expect(refused.error.message).to.match(
      /has permission to perform action 'Microsoft\.Compute\/virtualMachineScaleSets\/virtualMachines\/write' on scope '.*'; however, the current tenant '.*' is not authorized to access linked subscription '/,
    );
    // Without the image, its identity needs assign/action (not in the README's roles).
    rig.em.roleAssignments = ROLE_ROWS.map((r) => ({
      actions: [r.action],
      scope: `/subscriptions/${SUB}`,
    }));
    const { storageProfile: _image, ...noImage } = asRead.properties as Record<string, unknown>;
    const withIdentity = await put({ ...asRead, properties: noImage });
    expect(withIdentity.status).to.equal(403);
    expect(
      ((await withIdentity.json()) as { error: { message: string } }).error.message,
    ).to.include('Microsoft.ManagedIdentity/userAssignedIdentities/assign/action');
    // The backend, with exactly those roles: its update passes (a body with the
    // image would not), so it sent the network profile without image nor identity.
    const seen: string[] = [];
    const backend = backendFor(rig);
    const before = rig.em.requests.length;
    const { held } = await backend.applyNic(
      { name: 'pool000000', providerID: vm.providerID },
      { add: 2, remove: [] },
    );
    expect(held.ipAssignments).to.have.length(2);
    for (const r of rig.em.requests.slice(before)) seen.push(`${r.operation} ${r.status}`);
    expect(seen).to.include('ScaleSetVMs.Update 200');
    expect(seen.filter((x) => x.endsWith(' 403'))).to.deep.equal([]);
  });

  it('refuses a direct write of a Uniform instance’s NIC', async () => {
    rig = await startRig();
    const vm = addInstance(rig);
    // The SDKs have no call for it (it is not writable): the request as a client would send it.
    const res = await fetch(`${rig.em.endpoint}${vm.nicId}?api-version=2024-05-01`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(rig.em.network.getScaleSetNic(RG, 'pool', '0', vm.nicName)),
    });
    expect(res.status).to.equal(405);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.message).to.equal(
      "The operation 'write' on resource type 'virtualMachineScaleSets/virtualMachines/networkInterfaces' is disallowed.",
    );
    // Nor is it in the resource group's NIC list: the directory lists the scale set's.
    const listed: string[] = [];
    for await (const n of clientFor(rig).networkInterfaces.list(RG)) listed.push(n.name!);
    expect(listed).to.deep.equal([]);
  });

  it('a Flexible instance is a VM: its providerID names the VM, its NIC is written directly', async () => {
    rig = await startRig();
    const vm = rig.em.network.addVm({
      resourceGroup: RG,
      name: 'pool_1a2b3c4d',
      subnetId: rig.podSubnetId,
    });
    expect(vm.providerID).to.match(/\/virtualMachines\/pool_1a2b3c4d$/);
    const backend = backendFor(rig);
    const { held } = await backend.applyNic(
      { name: 'pool-1', providerID: vm.providerID },
      { add: 3, remove: [] },
    );
    expect(held.ipAssignments).to.have.length(3);
    expect(rig.em.count('NetworkInterfaces.CreateOrUpdate')).to.equal(1);
    expect(rig.em.count('ScaleSetVMs.Update')).to.equal(0);
  });

  it('the emulator keeps upgradePolicy.mode: Automatic and Rolling reset every instance on a model change, Manual only an instance upgraded', async () => {
    rig = await startRig();
    const backend = backendFor(rig);
    // A pod address on each instance, written into its own model.
    const fill = async (vm: { providerID: string }, name: string) =>
      (await backend.applyNic({ name, providerID: vm.providerID }, { add: 1, remove: [] })).held;
    const compute = computeClientFor(rig);
    for (const mode of ['Automatic', 'Rolling', 'Manual'] as const) {
      const ss = mode.toLowerCase();
      // Filled while Manual (the backend serves no other mode), then switched.
      const vms = ['0', '1', '2', '3', '4', '5'].map((instanceId) =>
        addInstance(rig, { scaleSet: ss, instanceId, upgradePolicy: 'Manual' }),
      );
      for (const [i, vm] of vms.entries()) await fill(vm, `${ss}-${i}`);
      rig.em.network.setUpgradePolicy(RG, ss, mode);
      expect((await compute.virtualMachineScaleSets.get(RG, ss)).upgradePolicy?.mode).to.equal(
        mode,
      );
      const held = () =>
        vms.map(
          (_, i) =>
            (
              rig.em.network.getScaleSetNic(RG, ss, String(i), `${ss}-nic`)!.properties!
                .ipConfigurations as unknown[]
            ).length,
        );
      expect(held()).to.deep.equal([3, 3, 3, 3, 3, 3]);
      const removed = rig.em.otherWriters.changeModel(RG, ss);
      if (mode === 'Manual') {
        expect(removed).to.equal(0);
        expect(held()).to.deep.equal([3, 3, 3, 3, 3, 3]);
        const vm = await compute.virtualMachineScaleSetVMs.get(RG, ss, '2');
        expect(vm.latestModelApplied).to.equal(false);
        expect(rig.em.otherWriters.upgradeInstances(RG, ss, ['2'])).to.equal(2);
        expect(held()).to.deep.equal([3, 3, 1, 3, 3, 3]);
        expect(
          (await compute.virtualMachineScaleSetVMs.get(RG, ss, '2')).latestModelApplied,
        ).to.equal(true);
        // An instance on the latest model is left alone.
        expect(rig.em.otherWriters.upgradeInstances(RG, ss, ['2'])).to.equal(0);
      } else {
        expect(removed).to.equal(12); // every instance: its pod address and NC primary
        expect(held()).to.deep.equal([1, 1, 1, 1, 1, 1]);
      }
    }
    expect(rig.em.otherWriters.removed.filter((r) => r.by === 'model-upgrade').length).to.equal(26);
  });

  it('refuses the nodes of a scale set whose upgrade policy is Automatic or Rolling (no write), serves them once it is Manual', async () => {
    rig = await startRig();
    const vm = addInstance(rig, { upgradePolicy: 'Automatic' });
    const backend = backendFor(rig, { minRelistMs: 0 });
    const node = { name: 'pool000000', providerID: vm.providerID };
    for (const mode of ['Automatic', 'Rolling'] as const) {
      rig.em.network.setUpgradePolicy(RG, 'pool', mode);
      const refused = await backend.applyNic(node, { add: 2, remove: [] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).to.be.instanceOf(NodeSetupError);
      expect(refused).to.include({ reason: 'ScaleSetUpgradePolicy', waitsForChange: true });
      expect((refused as Error).message).to.include(`upgradePolicy.mode ${mode}`);
    }
    expect(rig.em.count('ScaleSetVMs.Update')).to.equal(0);
    rig.em.network.setUpgradePolicy(RG, 'pool', 'Manual');
    const { held } = await backend.applyNic(node, { add: 2, remove: [] });
    expect(held.ipAssignments).to.have.length(2);
    expect(rig.em.count('ScaleSets.Get')).to.equal(3);
  });
});
