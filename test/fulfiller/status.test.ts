import { expect } from 'chai';
import { DEFAULT_SCALER } from '../../src/fulfiller/config.ts';
import { desiredStatus, jsonEqual } from '../../src/fulfiller/status.ts';
import type { NncStatus } from '../../src/nnc/types.ts';

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
  const previous: NncStatus = {
    networkContainers: [
      { id: 'static', assignmentMode: 'static' },
      { ...base, ipAssignments: [{ name: 'keep-me', ip: '10.0.0.5' }] },
    ],
  };

  it('keeps uuids of kept IPs, gives new ones fresh ids, bumps the version', () => {
    const s = desiredStatus({
      previous,
      container: previous.networkContainers![1]!,
      isNewContainer: false,
      keep: [{ name: 'keep-me', ip: '10.0.0.5' }],
      released: 0,
      newIps: ['10.0.0.6', '10.0.0.7'],
      requested: 3,
      subnetShort: false,
      scaler: DEFAULT_SCALER,
      newId,
    });
    const nc = s.networkContainers![1]!;
    expect(s.networkContainers![0]!.id).to.equal('static');
    expect(nc.ipAssignments!.map((a) => a.name)).to.deep.equal(['keep-me', 'uuid-1', 'uuid-2']);
    expect(nc.version).to.equal(4);
    expect(s.assignedIPCount).to.equal(3);
    expect(s.status).to.equal('Updated');
    expect(s.scaler).to.deep.equal({
      batchSize: 16,
      requestThresholdPercent: 50,
      releaseThresholdPercent: 150,
      maxIPCount: 250,
    });
  });

  it('reports SubnetFull when the subnet fell short, Updating otherwise', () => {
    const input = {
      previous,
      container: previous.networkContainers![1]!,
      isNewContainer: false,
      keep: [],
      released: 1,
      newIps: [],
      requested: 5,
      scaler: DEFAULT_SCALER,
      newId,
    };
    expect(desiredStatus({ ...input, subnetShort: true }).status).to.equal('SubnetFull');
    expect(desiredStatus({ ...input, subnetShort: false }).status).to.equal('Updating');
  });

  it('an unchanged plan reproduces the same status (no write)', () => {
    const first = desiredStatus({
      previous,
      container: previous.networkContainers![1]!,
      isNewContainer: false,
      keep: [{ name: 'keep-me', ip: '10.0.0.5' }],
      released: 0,
      newIps: [],
      requested: 1,
      subnetShort: false,
      scaler: DEFAULT_SCALER,
      newId,
    });
    const again = desiredStatus({
      previous: first,
      container: first.networkContainers![1]!,
      isNewContainer: false,
      keep: first.networkContainers![1]!.ipAssignments!,
      released: 0,
      newIps: [],
      requested: 1,
      subnetShort: false,
      scaler: DEFAULT_SCALER,
      newId,
    });
    expect(jsonEqual(first, again)).to.equal(true);
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
