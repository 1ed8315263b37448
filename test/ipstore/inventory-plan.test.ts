// The pure plan of "the store follows the NNC status": which containers and
// IPs are kept, backed, renamed, unbacked, removed or added, and what is
// reported. sqlite-store.ts applies it; store.test.ts and
// nc-id-change.test.ts check the applied result against SQLite.
import { expect } from 'chai';
import { ipSortKey } from '../../src/ipstore/address.ts';
import { planInventory, type InventoryPlan } from '../../src/ipstore/inventory-plan.ts';
import type { IpRow } from '../../src/ipstore/rows.ts';
import type { IpState } from '../../src/ipstore/types.ts';
import type { BackedContainer } from '../../src/ipstore/validate.ts';

const NOW = 5000;

function nc(id: string, ips: [string, string][]): BackedContainer {
  return {
    id,
    subnetAddressSpace: '10.0.0.0/24',
    defaultGateway: '10.0.0.1',
    primaryIP: '10.0.0.2',
    family: 4,
    ips: ips.map(([ipId, ip]) => ({ id: ipId, ip, ncId: id, family: ip.includes(':') ? 6 : 4 })),
  };
}

function row(id: string, ip: string, o: { state?: IpState; nc?: string; backed?: 0 | 1 } = {}) {
  const state = o.state ?? 'Available';
  const held = state === 'Assigned';
  const r: IpRow = {
    id,
    ip,
    ip_key: ipSortKey(ip),
    family: ip.includes(':') ? 6 : 4,
    nc_id: o.nc ?? 'nc-a',
    state,
    pod_interface_id: held ? `${id}-eth0` : null,
    infra_container_id: held ? `${id}-sandbox` : null,
    pod_name: held ? `pod-${id}` : null,
    pod_namespace: held ? 'default' : null,
    backed: o.backed ?? 1,
    updated_at: 1,
  };
  return r;
}

/** The plan's steps and report, by ids only. */
function summary(plan: InventoryPlan) {
  return {
    unbackContainers: plan.unbackContainers,
    renames: plan.renames.map((r) => `${r.from}->${r.id}@${r.ncId}`),
    unback: plan.unback,
    remove: plan.remove,
    reback: plan.reback.map((r) => `${r.id}@${r.ncId}`),
    insert: plan.insert.map((r) => `${r.id}=${r.ip}`),
    added: plan.change.added.map((r) => r.id),
    removed: plan.change.removed.map((r) => r.id),
    vanished: plan.change.assignedVanished.map((r) => r.id),
    conflicts: (plan.change.conflicts ?? []).map((c) => `${c.id}: ${c.reason}`),
  };
}

const NOTHING: Record<keyof ReturnType<typeof summary>, string[]> = {
  unbackContainers: [],
  renames: [],
  unback: [],
  remove: [],
  reback: [],
  insert: [],
  added: [],
  removed: [],
  vanished: [],
  conflicts: [],
};

interface Case {
  name: string;
  containers: BackedContainer[];
  rows: IpRow[];
  backedContainerIds?: string[];
  want: Partial<typeof NOTHING>;
}

const cases: Case[] = [
  {
    name: 'an empty store takes every IP of the status',
    containers: [
      nc('nc-a', [
        ['ip-1', '10.0.0.4'],
        ['ip-2', '10.0.0.5'],
      ]),
    ],
    rows: [],
    want: { insert: ['ip-1=10.0.0.4', 'ip-2=10.0.0.5'], added: ['ip-1', 'ip-2'] },
  },
  {
    name: 'a store that matches the status changes nothing',
    containers: [nc('nc-a', [['ip-1', '10.0.0.4']])],
    rows: [row('ip-1', '10.0.0.4', { state: 'Assigned' })],
    backedContainerIds: ['nc-a'],
    want: {},
  },
  {
    name: 'an IP the status dropped goes unless a pod holds it; a held one is unbacked once',
    containers: [nc('nc-a', [])],
    rows: [
      row('ip-1', '10.0.0.4'),
      row('ip-2', '10.0.0.5', { state: 'PendingRelease' }),
      row('ip-3', '10.0.0.6', { state: 'Assigned' }),
      row('ip-4', '10.0.0.7', { state: 'Assigned', backed: 0 }),
    ],
    want: {
      remove: ['ip-1', 'ip-2'],
      removed: ['ip-1', 'ip-2'],
      unback: ['ip-3'],
      vanished: ['ip-3'],
    },
  },
  {
    name: 'an unbacked Assigned IP the status lists again is backed again',
    containers: [nc('nc-a', [['ip-1', '10.0.0.4']])],
    rows: [row('ip-1', '10.0.0.4', { state: 'Assigned', backed: 0 })],
    want: { reback: ['ip-1@nc-a'] },
  },
  {
    name: 'an IP that moved to another container follows it',
    containers: [nc('nc-b', [['ip-1', '10.0.0.4']])],
    rows: [row('ip-1', '10.0.0.4', { nc: 'nc-a' })],
    backedContainerIds: ['nc-a'],
    want: { unbackContainers: ['nc-a'], reback: ['ip-1@nc-b'] },
  },
  {
    name: 'an address a pod holds under a dropped id moves to its new id and container',
    containers: [nc('nc-b', [['new-1', '10.0.0.4']])],
    rows: [row('old-1', '10.0.0.4', { state: 'Assigned' })],
    want: { renames: ['old-1->new-1@nc-b'] },
  },
  {
    name: 'an Available IP under a dropped id is replaced, not renamed',
    containers: [nc('nc-b', [['new-1', '10.0.0.4']])],
    rows: [row('old-1', '10.0.0.4')],
    want: {
      remove: ['old-1'],
      removed: ['old-1'],
      insert: ['new-1=10.0.0.4'],
      added: ['new-1'],
    },
  },
  {
    name: 'an id a pod holds under another address is a conflict; the pod keeps it, unbacked',
    containers: [nc('nc-a', [['ip-1', '10.0.0.9']])],
    rows: [row('ip-1', '10.0.0.4', { state: 'Assigned' })],
    want: {
      unback: ['ip-1'],
      vanished: ['ip-1'],
      conflicts: ['ip-1: id is held by a pod under address 10.0.0.4'],
    },
  },
  {
    name: 'an address a pod holds under an id that cannot be renamed is a conflict',
    containers: [nc('nc-a', [['ip-3', '10.0.0.4']])],
    rows: [row('ip-9', '10.0.0.4', { state: 'Assigned' }), row('ip-3', '10.0.0.5')],
    want: {
      unback: ['ip-9'],
      vanished: ['ip-9'],
      remove: ['ip-3'],
      removed: ['ip-3'],
      conflicts: ['ip-3: address is held by a pod under id ip-9'],
    },
  },
  {
    name: 'an address written another way is the same address',
    containers: [nc('nc-a', [['ip-2', '::ffff:10.0.0.4']])],
    rows: [row('ip-1', '10.0.0.4', { state: 'Assigned', backed: 0 }), row('ip-2', '10.0.0.5')],
    want: {
      remove: ['ip-2'],
      removed: ['ip-2'],
      conflicts: ['ip-2: address is held by a pod under id ip-1'],
    },
  },
];

describe('planInventory', () => {
  for (const c of cases) {
    it(c.name, () => {
      const rows = structuredClone(c.rows);
      const plan = planInventory({
        containers: c.containers,
        backedContainerIds: c.backedContainerIds ?? [],
        rows,
        newState: 'Available',
        now: NOW,
      });
      expect(summary(plan)).to.deep.equal({ ...NOTHING, ...c.want });
      expect(plan.containers.map((x) => x.id)).to.deep.equal(c.containers.map((x) => x.id));
      expect(rows, 'the rows given are not changed').to.deep.equal(c.rows);
    });
  }

  it('adds new IPs in the start state, at now, and reports them as records', () => {
    const plan = planInventory({
      containers: [nc('nc-a', [['ip-1', '10.0.0.4']])],
      backedContainerIds: [],
      rows: [],
      newState: 'PendingProgramming',
      now: NOW,
    });
    expect(plan.insert[0]).to.include({ state: 'PendingProgramming', updated_at: NOW, backed: 1 });
    expect(plan.change.added).to.deep.equal([
      { id: 'ip-1', ip: '10.0.0.4', ncId: 'nc-a', state: 'PendingProgramming', updatedAt: NOW },
    ]);
  });

  it('reports a vanished IP as its record, unbacked', () => {
    const plan = planInventory({
      containers: [],
      backedContainerIds: ['nc-a'],
      rows: [row('ip-1', '10.0.0.4', { state: 'Assigned' })],
      newState: 'Available',
      now: NOW,
    });
    expect(plan.unbackContainers).to.deep.equal(['nc-a']);
    expect(plan.change.assignedVanished[0]).to.include({ id: 'ip-1', vanished: true });
    expect(plan.change.assignedVanished[0]?.pod?.podName).to.equal('pod-ip-1');
  });
});
