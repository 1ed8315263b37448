// The README's role table ("On Azure") is what the fulfiller needs, no more:
// a real `bin/pool-monitor fulfiller --backend azure` on the strict emulator,
// given exactly those role assignments, fills nodes of every kind (pod NIC,
// node subnet, Uniform scale set); taken away one at a time, each row is
// missed (a 403 for the call it is for).
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSubnetId } from '../../src/azure/arm/ids.ts';
import type { RoleAssignment } from '../../harness/azure-emulator/authorization.ts';
import {
  CLOUD_RESOURCE_GROUP,
  CLOUD_SUBSCRIPTION,
  CLOUD_TOKEN,
  EmulatedCloud,
} from '../../harness/azure-emulator/cloud.ts';
import { CALL_ACTIONS, roleDefinition, roleTable, ROLE_ROWS } from '../../src/azure/arm/actions.ts';
import { createAzureBackend } from '../../src/azure/setup.ts';
import { dynamicContainers } from '../../src/nnc/types.ts';
import type { AzureCluster } from '../support/azure-cluster.ts';
import { safetyViolations, startAzureCluster } from '../support/azure-cluster.ts';
import { spawnFulfiller } from '../support/fulfiller-process.ts';
import type { FulfillerProcess } from '../support/fulfiller-process.ts';
import { waitFor } from '../support/wait.ts';
import { staticToken } from './helpers.ts';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The README's role rows: [action, scope with placeholders]. */
function readmeRoles(): Array<[string, string]> {
  const at = README.indexOf('| Action | Scope | For |');
  expect(at, 'the role table in the README').to.be.greaterThan(0);
  const rows: Array<[string, string]> = [];
  for (const line of README.slice(at).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    const [, action, scope] = line.split('|').map((c) => c.trim().replaceAll('`', ''));
    rows.push([action!, scope!]);
  }
  return rows;
}

function assignments(rows: Array<[string, string]>, podSubnetId: string): RoleAssignment[] {
  parseSubnetId(podSubnetId);
  const vnet = podSubnetId.replace(/\/subnets\/[^/]+$/, '');
  return rows.map(([action, scope]) => ({
    actions: [action],
    scope: scope
      .replace('POD_SUBNET_ID', podSubnetId)
      .replace('VNET_ID', vnet)
      .replace('SUB', CLOUD_SUBSCRIPTION)
      .replace('NODES_RG', CLOUD_RESOURCE_GROUP),
  }));
}

describe("README's Azure role assignments, on the strict emulator", function () {
  this.timeout(90_000);
  let cluster: AzureCluster | undefined;
  let proc: FulfillerProcess | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    if (proc && proc.child.exitCode === null) {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    await cluster?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    cluster = proc = dir = undefined;
  });

  it('a real fulfiller with exactly those roles fills nodes of every kind, no 403', async () => {
    const rows = readmeRoles();
    expect(rows.length).to.be.at.least(5);
    const probe = new EmulatedCloud();
    cluster = await startAzureCluster({
      roleAssignments: assignments(rows, probe.podSubnetId),
    });
    dir = mkdtempSync(join(tmpdir(), 'pm-azure-roles-'));
    writeFileSync(join(dir, 'token'), CLOUD_TOKEN);
    proc = spawnFulfiller(
      'roles',
      [
        ...['--kubeconfig', cluster.server.kubeconfigPath, '--leader-elect', 'false'],
        ...['--backend', 'azure', '--azure-token-file', join(dir, 'token')],
      ],
      {
        AZURE_SUBSCRIPTION_ID: CLOUD_SUBSCRIPTION,
        AZURE_RESOURCE_GROUP: CLOUD_RESOURCE_GROUP,
        AZURE_POD_SUBNET_ID: cluster.cloud.podSubnetId,
        AZURE_RESOURCE_MANAGER_ENDPOINT: cluster.cloud.emulator.endpoint,
      },
    );
    const nodes = ['node-0', 'node-1', 'node-2']; // pod NIC, node subnet, scale set
    for (const n of nodes) await cluster.addNode(n);
    for (const n of nodes) await cluster.setSpec(n, { requestedIPCount: 4 });
    for (const n of nodes) {
      await waitFor(
        `${n} filled`,
        async () => {
          const o = await cluster!.get(n);
          return o && dynamicContainers(o)[0]?.ipAssignments?.length === 4 ? o : undefined;
        },
        30_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the fulfiller said: ${proc!.output().slice(-2000)}`);
      });
    }
    expect(cluster.cloud.emulator.requests.filter((r) => r.status === 403)).to.deep.equal([]);
    expect(safetyViolations(cluster)).to.deep.equal([]);
  });

  it("without --pod-subnet-id (each NIC's own subnet), the same rows on each subnet in use fill both subnets and a scale set, no 403", async () => {
    const rows = readmeRoles();
    const probe = new EmulatedCloud({ layout: 'node-subnets' });
    cluster = await startAzureCluster({
      layout: 'node-subnets',
      roleAssignments: [
        ...assignments(rows, probe.nodeSubnetId),
        ...assignments(rows, probe.podSubnetId),
      ],
    });
    dir = mkdtempSync(join(tmpdir(), 'pm-azure-roles-'));
    writeFileSync(join(dir, 'token'), CLOUD_TOKEN);
    proc = spawnFulfiller(
      'roles-node-subnets',
      [
        ...['--kubeconfig', cluster.server.kubeconfigPath, '--leader-elect', 'false'],
        ...['--backend', 'azure', '--azure-token-file', join(dir, 'token')],
      ],
      {
        AZURE_SUBSCRIPTION_ID: CLOUD_SUBSCRIPTION,
        AZURE_RESOURCE_GROUP: CLOUD_RESOURCE_GROUP,
        AZURE_RESOURCE_MANAGER_ENDPOINT: cluster.cloud.emulator.endpoint,
      },
    );
    const nodes = ['node-0', 'node-1', 'node-2']; // aks-nodes, aks-pods, scale set in aks-nodes
    for (const n of nodes) await cluster.addNode(n);
    for (const n of nodes) await cluster.setSpec(n, { requestedIPCount: 4 });
    const subnetNames: string[] = [];
    for (const n of nodes) {
      const nnc = await waitFor(
        `${n} filled`,
        async () => {
          const o = await cluster!.get(n);
          return o && dynamicContainers(o)[0]?.ipAssignments?.length === 4 ? o : undefined;
        },
        30_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the fulfiller said: ${proc!.output().slice(-2000)}`);
      });
      subnetNames.push(dynamicContainers(nnc)[0]!.subnetName!);
    }
    expect(subnetNames).to.deep.equal(['aks-nodes', 'aks-pods', 'aks-nodes']);
    expect(cluster.cloud.emulator.requests.filter((r) => r.status === 403)).to.deep.equal([]);
    expect(safetyViolations(cluster)).to.deep.equal([]);
  });

  it('the table is src/azure/arm/actions.ts, row for row', () => {
    const at = README.indexOf('| Action | Scope | For |');
    const lines = README.slice(at).split('\n');
    const table = lines
      .slice(
        0,
        lines.findIndex((l) => !l.startsWith('|')),
      )
      .join('\n');
    expect(table).to.equal(roleTable());
    // Every action a call needs is a row (the emulator authorizes with the same list).
    const granted = new Set(ROLE_ROWS.map((r) => r.action));
    for (const action of Object.values(CALL_ACTIONS)) expect(granted).to.include(action);
  });

  it("the Azure overlay's role definition and role comment are the same list", () => {
    const file = (name: string) =>
      readFileSync(new URL(`../../manifests/azure/${name}`, import.meta.url), 'utf8');
    expect(JSON.parse(file('role-definition.json'))).to.deep.equal(roleDefinition());
    const listed = [...file('serviceaccount-azure.yaml').matchAll(/^\s+#\s+(Microsoft\.\S+)$/gm)]
      .map((m) => m[1])
      .sort();
    expect(listed).to.deep.equal([...new Set(ROLE_ROWS.map((r) => r.action))].sort());
  });

  it('each row is needed: without it, ARM refuses that action (403) and some node is not filled', async () => {
    const rows = readmeRoles();
    for (let i = 0; i < rows.length; i++) {
      const cloud = new EmulatedCloud({ quota: false });
      cloud.emulator.roleAssignments = assignments(
        rows.filter((_, j) => j !== i),
        cloud.podSubnetId,
      );
      await cloud.start();
      try {
        const { backend } = await createAzureBackend(cloud.settings(1000, 1000), {
          tokens: staticToken(CLOUD_TOKEN),
        });
        await backend.start().catch(() => undefined);
        const served: string[] = [];
        for (const n of ['node-0', 'node-1', 'node-2']) {
          const providerID = cloud.addNode(n);
          await backend.applyNic({ name: n, providerID }, { add: 2, remove: [] }).then(
            () => served.push(n),
            () => undefined,
          );
        }
        const refused = cloud.emulator.requests.filter((r) => r.status === 403);
        const action = rows[i]![0];
        expect(
          refused.some((r) => r.error?.includes(`action '${action}'`)),
          `without ${action} on ${rows[i]![1]}: ${refused.map((r) => r.error).join('; ')}`,
        ).to.equal(true);
        // What is missed: a node left unserved, or (the usage read) a
        // ClusterSubnetState that counts addresses in use as free.
        const truth = cloud.emulator.network.subnet(cloud.podSubnetId)!;
        const css = backend.subnets().find((x) => x.name === 'aks-pods');
        const wrongCss = css?.free !== truth.limit - truth.inUse;
        expect(served.length < 3 || wrongCss, `without ${action}: every node served`).to.equal(
          true,
        );
      } finally {
        await cloud.stop();
      }
    }
  });
});
