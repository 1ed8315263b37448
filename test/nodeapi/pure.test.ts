import { expect } from 'chai';
import { buildDebugPool } from '../../src/nodeapi/debug-pool.ts';
import { ipConfigurationStatus, podIpInfo } from '../../src/nodeapi/ipam.ts';
import {
  parseIpConfigsRequest,
  parseStateFilter,
  prefixLength,
} from '../../src/nodeapi/validate.ts';

const zero = { Available: 0, Assigned: 0, PendingRelease: 0, PendingProgramming: 0 };

describe('node api pure helpers', () => {
  it('prefixLength reads IPv4 and IPv6 CIDRs and refuses anything else', () => {
    expect(prefixLength('10.240.0.0/16')).to.equal(16);
    expect(prefixLength('fd00::/64')).to.equal(64);
    expect(prefixLength('10.0.0.0/33')).to.equal(undefined);
    expect(prefixLength('10.0.0.0')).to.equal(undefined);
    expect(prefixLength('nonsense/8')).to.equal(undefined);
    expect(prefixLength(undefined)).to.equal(undefined);
  });

  it('podIpInfo falls back to a host prefix when the container is unknown', () => {
    const info = podIpInfo(
      { id: 'a', ip: 'fd00::5', ncId: 'x', state: 'Assigned', updatedAt: 0 },
      undefined,
    );
    expect(info.PodIPConfig).to.deep.equal({ IPAddress: 'fd00::5', PrefixLength: 128 });
    expect(info.NetworkContainerPrimaryIPConfig.GatewayIPAddress).to.equal('');
  });

  it('parseIpConfigsRequest normalises desired IPs (dedupe) and reads the pod', () => {
    const parsed = parseIpConfigsRequest({
      podInterfaceID: 'i',
      infraContainerID: 'c',
      orchestratorContext: { PodName: 'p', PodNamespace: 'n' },
      desiredIPAddresses: ['10.0.0.1', '10.0.0.1'],
    });
    expect(parsed).to.deep.equal({
      ok: true,
      value: {
        podInterfaceID: 'i',
        infraContainerID: 'c',
        podName: 'p',
        podNamespace: 'n',
        desiredIPAddresses: ['10.0.0.1'],
      },
    });
  });

  it('parseStateFilter: absent or empty means every state, Allocated means Assigned', () => {
    const all = ['Available', 'Assigned', 'PendingRelease', 'PendingProgramming'];
    expect(parseStateFilter({})).to.deep.equal({ ok: true, value: all });
    expect(parseStateFilter({ IPConfigStateFilter: [] })).to.deep.equal({ ok: true, value: all });
    expect(parseStateFilter({ IPConfigStateFilter: ['Allocated', 'Assigned'] })).to.deep.equal({
      ok: true,
      value: ['Assigned'],
    });
    expect(parseStateFilter({ IPConfigStateFilter: 'Assigned' }).ok).to.be.false;
    expect(parseStateFilter(null).ok).to.be.false;
  });

  it('ipConfigurationStatus has PodInfo null for a free IP', () => {
    expect(
      ipConfigurationStatus({
        id: 'a',
        ip: '1.2.3.4',
        ncId: 'n',
        state: 'Available',
        updatedAt: 0,
      }),
    ).to.deep.equal({
      ID: 'a',
      IPAddress: '1.2.3.4',
      NCID: 'n',
      State: 'Available',
      PodInfo: null,
    });
  });

  it('buildDebugPool keeps only finite numbers and formats the reconcile time', () => {
    const doc = buildDebugPool(
      {
        demand: Number.NaN,
        scaler: { batch: 10, buffer: 0.5, bogus: 'x', inf: Infinity },
        exhausted: true,
        lastReconcile: { at: 'not a date', outcome: 'failed', error: 'patch 409' },
      },
      { ...zero, Assigned: 2 },
    );
    expect(doc.demand).to.equal(null);
    expect(doc.scaler).to.deep.equal({ batch: 10, buffer: 0.5 });
    expect(doc.exhausted).to.be.true;
    expect(doc.ipCounts.total).to.equal(2);
    expect(doc.lastReconcile).to.deep.equal({ at: null, outcome: 'failed', error: 'patch 409' });
    expect(buildDebugPool(undefined, zero).lastReconcile).to.equal(null);
  });

  it('buildDebugPool shows each address family with its subnet, exhaustion and counts', () => {
    const doc = buildDebugPool({ exhausted: true }, { ...zero, Assigned: 4, Available: 1 }, [
      {
        name: 'IPv4',
        subnet: 'pods-v4',
        subnetAddressSpace: '10.0.0.0/16',
        exhausted: false,
        counts: { ...zero, Assigned: 2, Available: 1 },
      },
      { name: 'IPv6', exhausted: true, counts: { ...zero, Assigned: 2 } },
    ]);
    expect(doc.ipCounts.total).to.equal(5);
    expect(doc.families).to.deep.equal({
      IPv4: {
        subnet: 'pods-v4',
        subnetAddressSpace: '10.0.0.0/16',
        exhausted: false,
        ipCounts: { ...zero, Assigned: 2, Available: 1, total: 3 },
      },
      IPv6: {
        subnet: null,
        subnetAddressSpace: null,
        exhausted: true,
        ipCounts: { ...zero, Assigned: 2, total: 2 },
      },
    });
    expect(Object.keys(doc.families)).to.deep.equal(['IPv4', 'IPv6']);
  });
});
