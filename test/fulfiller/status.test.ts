import { expect } from 'chai';
import { DEFAULT_SCALER } from '../../src/fulfiller/config.ts';
import type { HeldContainer } from '../../src/fulfiller/backend.ts';
import { containerFrom, jsonEqual, mergeKept, statusOf } from '../../src/fulfiller/status.ts';
import type { NetworkContainer, NncStatus } from '../../src/nnc/types.ts';

describe('fulfiller/status', () => {
  let n = 0;
  const newId = () => `uuid-${++n}`;
  const base = {
    id: 'nc1',
    assignmentMode: 'dynamic' as const,
    type: 'vnet',
    primaryIP: '10.0.0.4',
    subnetName: 's',
    subnetAddressSpace: '10.0.0.0/16',
    defaultGateway: '10.0.0.1',
    nodeIP: '',
    version: 3,
  };
  const existing: NetworkContainer = {
    ...base,
    ipAssignments: [{ name: 'keep-me', ip: '10.0.0.5' }],
  };
  const previous: NncStatus = {
    networkContainers: [{ id: 'static', assignmentMode: 'static' }, existing],
  };
  const held = (ips: Array<{ name: string; ip: string }>): HeldContainer => ({
    primaryIP: '10.0.0.4',
    subnetName: 's',
    subnetAddressSpace: '10.0.0.0/16',
    defaultGateway: '10.0.0.1',
    type: 'vnet',
    ipAssignments: ips,
  });

  it('keeps the container id and the ids the backend named, bumps the version on change', () => {
    const container = containerFrom({
      held: held([
        { name: 'keep-me', ip: '10.0.0.5' },
        { name: 'new-1', ip: '10.0.0.6' },
        { name: 'new-2', ip: '10.0.0.7' },
      ]),
      existing,
      newId,
      nodeIP: '10.224.0.4',
    });
    const s = statusOf({
      previous,
      containers: [container],
      requested: 3,
      subnetShort: false,
      scaler: DEFAULT_SCALER,
    });
    const nc = s.networkContainers![1]!;
    expect(s.networkContainers![0]!.id).to.equal('static');
    expect(nc.id).to.equal('nc1');
    expect(nc.ipAssignments!.map((a) => a.name)).to.deep.equal(['keep-me', 'new-1', 'new-2']);
    expect(nc.version).to.equal(4);
    expect(nc.nodeIP).to.equal('10.224.0.4');
    expect(s.assignedIPCount).to.equal(3);
    expect(s.status).to.equal('Updated');
    expect(s.scaler).to.deep.equal({
      batchSize: 16,
      requestThresholdPercent: 50,
      releaseThresholdPercent: 150,
      maxIPCount: 250,
    });
  });

  it('a new container gets a fresh id and version 0; the backend nodeIP wins', () => {
    const c = containerFrom({
      held: { ...held([]), nodeIP: '10.1.0.9' },
      newId: () => 'fresh',
      nodeIP: '10.224.0.4',
    });
    expect(c).to.include({
      id: 'fresh',
      version: 0,
      nodeIP: '10.1.0.9',
      assignmentMode: 'dynamic',
    });
  });

  it('reports SubnetFull when the subnet fell short, Updating otherwise', () => {
    const container = containerFrom({ held: held([]), existing, newId });
    const input = { previous, containers: [container], requested: 5, scaler: DEFAULT_SCALER };
    expect(statusOf({ ...input, subnetShort: true }).status).to.equal('SubnetFull');
    expect(statusOf({ ...input, subnetShort: false }).status).to.equal('Updating');
  });

  it('an unchanged container reproduces the same status (no write)', () => {
    const first = statusOf({
      previous,
      containers: [containerFrom({ held: held(existing.ipAssignments!), existing, newId })],
      requested: 1,
      subnetShort: false,
      scaler: DEFAULT_SCALER,
    });
    const nc = first.networkContainers![1]!;
    const again = statusOf({
      previous: first,
      containers: [containerFrom({ held: held(nc.ipAssignments!), existing: nc, newId })],
      requested: 1,
      subnetShort: false,
      scaler: DEFAULT_SCALER,
    });
    expect(jsonEqual(first, again)).to.equal(true);
    expect(nc.version).to.equal(3);
  });

  it('a restore merges: kept addresses join, what the status holds stays under its ids', () => {
    // A fresh successor: the kept container as it was.
    expect(mergeKept([], [existing], newId)).to.deep.equal([existing]);
    // A live status of the same subnet: its container and ids stay, the kept addresses join.
    const live: NetworkContainer = {
      ...base,
      id: 'live',
      primaryIP: '10.0.0.9',
      version: 0,
      ipAssignments: [{ name: 'keep-me', ip: '10.0.0.10' }],
    };
    const [merged] = mergeKept([live], [existing], () => 'renamed');
    expect(merged!.id).to.equal('live');
    expect(merged!.primaryIP).to.equal('10.0.0.9');
    expect(merged!.ipAssignments).to.deep.equal([
      { name: 'keep-me', ip: '10.0.0.10' },
      { name: 'renamed', ip: '10.0.0.5' }, // its id was taken: a new one
    ]);
    expect(merged!.version).to.equal(1);
    // Nothing to add: unchanged.
    expect(mergeKept([merged!], [existing], newId)).to.deep.equal([merged]);
  });

  it('a status keeps each container where it was, the others untouched', () => {
    const s = statusOf({
      previous: { networkContainers: [existing, { id: 'static', assignmentMode: 'static' }] },
      containers: [existing],
      requested: 1,
      subnetShort: false,
      scaler: DEFAULT_SCALER,
    });
    expect(s.networkContainers!.map((nc) => nc.id)).to.deep.equal(['nc1', 'static']);
  });

  it('jsonEqual ignores key order and undefined keys only', () => {
    expect(
      jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1, d: undefined }),
    ).to.equal(true);
    expect(jsonEqual({ a: 1 }, { a: 2 })).to.equal(false);
    expect(jsonEqual([1, 2], [2, 1])).to.equal(false);
    expect(jsonEqual(undefined, {})).to.equal(false);
  });
});
