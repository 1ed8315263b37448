// The pure plan of "the store follows the pods": leak suspects and their
// clocks, reclaims after the grace, adoptions and conflicts.
import { expect } from 'chai';
import {
  assignmentKey,
  planPodFollowing,
  type PodPlanInput,
  type PodView,
} from '../../src/ipstore/pod-plan.ts';
import type { IpRecord } from '../../src/ipstore/types.ts';

const GRACE = 60_000;

function ip(n: number, holder?: string, sandbox = `${holder}-s1`): IpRecord {
  const r: IpRecord = {
    id: `id-${n}`,
    ip: `10.0.0.${n}`,
    ncId: 'nc',
    state: holder === undefined ? 'Available' : 'Assigned',
    updatedAt: 0,
  };
  if (holder !== undefined) {
    r.pod = {
      podInterfaceID: `${sandbox}-eth0`,
      infraContainerID: sandbox,
      podName: holder,
      podNamespace: 'default',
    };
  }
  return r;
}

function pod(
  name: string,
  o: { phase?: string; ips?: string[]; host?: boolean; t?: string } = {},
): PodView {
  return {
    metadata: { name, namespace: 'default', ...(o.t ? { creationTimestamp: o.t } : {}) },
    spec: { nodeName: 'n1', ...(o.host ? { hostNetwork: true } : {}) },
    status: {
      phase: o.phase ?? 'Running',
      ...(o.ips ? { podIP: o.ips[0], podIPs: o.ips.map((x) => ({ ip: x })) } : {}),
    },
  };
}

function plan(records: IpRecord[], pods: PodView[], extra: Partial<PodPlanInput> = {}) {
  return planPodFollowing({
    records,
    pods,
    nodeName: 'n1',
    podsSynced: true,
    absentSince: new Map(),
    now: 0,
    graceMs: GRACE,
    ...extra,
  });
}

describe('ipstore/pod-plan', () => {
  describe('leak suspects', () => {
    it('an Assigned IP whose pod is gone is reclaimed after the grace without a break, not before', () => {
      const records = [ip(2, 'gone'), ip(3, 'web')];
      const first = plan(records, [pod('web')], { now: 1_000 });
      expect(first.reclaim).to.deep.equal([]);
      expect(
        first.suspects.map((s) => [s.record.id, s.reason, s.since, s.reclaimAt]),
      ).to.deep.equal([['id-2', 'pod-deleted', 1_000, 61_000]]);
      expect(first.nextAt).to.equal(61_000);
      const before = plan(records, [pod('web')], { now: 60_999, absentSince: first.absentSince });
      expect(before.reclaim).to.deep.equal([]);
      const after = plan(records, [pod('web')], { now: 61_000, absentSince: first.absentSince });
      expect(after.reclaim.map((s) => s.record.id)).to.deep.equal(['id-2']);
    });

    it('a Succeeded or Failed pod is a suspect too (pod-completed); Pending and Running are not', () => {
      const records = [ip(2, 'job'), ip(3, 'crash'), ip(4, 'pending'), ip(5, 'run')];
      const p = plan(records, [
        pod('job', { phase: 'Succeeded' }),
        pod('crash', { phase: 'Failed' }),
        pod('pending', { phase: 'Pending' }),
        pod('run'),
      ]);
      expect(p.suspects.map((s) => [s.record.id, s.reason])).to.deep.equal([
        ['id-2', 'pod-completed'],
        ['id-3', 'pod-completed'],
      ]);
    });

    it('a pod that comes back within the grace keeps its IP and its clock starts over', () => {
      const records = [ip(2, 'web')];
      const gone = plan(records, [], { now: 0 });
      const back = plan(records, [pod('web')], { now: 30_000, absentSince: gone.absentSince });
      expect(back.suspects).to.deep.equal([]);
      const goneAgain = plan(records, [], { now: 50_000, absentSince: back.absentSince });
      expect(goneAgain.suspects[0]?.reclaimAt).to.equal(110_000);
    });

    it('nothing is suspected or reclaimed while the pod watch is not synced, and the clocks restart', () => {
      const records = [ip(2, 'gone')];
      const first = plan(records, [], { now: 0 });
      const lost = plan(records, [], {
        now: 70_000,
        podsSynced: false,
        absentSince: first.absentSince,
      });
      expect([lost.reclaim, lost.suspects, [...lost.absentSince]]).to.deep.equal([[], [], []]);
      const relisted = plan(records, [], { now: 80_000, absentSince: lost.absentSince });
      expect(relisted.suspects[0]?.reclaimAt).to.equal(140_000);
    });

    it('the clock belongs to one assignment: a new sandbox of the same pod starts its own', () => {
      const old = ip(2, 'web', 'web-s1');
      const first = plan([old], [], { now: 0 });
      const renewed = ip(2, 'web', 'web-s2');
      expect(first.absentSince.has(assignmentKey(renewed))).to.equal(false);
      const next = plan([renewed], [], { now: 59_000, absentSince: first.absentSince });
      expect(next.reclaim).to.deep.equal([]);
      expect(next.suspects[0]?.since).to.equal(59_000);
    });

    it('a pod bound to another node is not on this one', () => {
      const elsewhere = { ...pod('web'), spec: { nodeName: 'n2' } };
      expect(plan([ip(2, 'web')], [elsewhere]).suspects).to.have.length(1);
    });
  });

  describe('adoption', () => {
    it('adopts addresses live pods report that the store does not hold as theirs', () => {
      const records = [ip(2), ip(3, 'web'), { ...ip(4), state: 'PendingRelease' as const }];
      const p = plan(records, [
        pod('a', { ips: ['10.0.0.2'] }),
        pod('web', { ips: ['10.0.0.3'] }),
        pod('b', { ips: ['10.0.0.4'] }),
        pod('done', { phase: 'Succeeded', ips: ['10.0.0.9'] }),
        pod('host', { host: true, ips: ['10.224.0.4'] }),
      ]);
      expect(p.adopt).to.deep.equal([
        { ip: '10.0.0.2', podNamespace: 'default', podName: 'a' },
        { ip: '10.0.0.4', podNamespace: 'default', podName: 'b' },
      ]);
      expect(p.conflicts).to.deep.equal([]);
    });

    it("takes an address over from a gone pod's assignment instead of reclaiming it", () => {
      const p = plan([ip(2, 'gone')], [pod('new', { ips: ['10.0.0.2'] })]);
      expect(p.adopt).to.deep.equal([
        {
          ip: '10.0.0.2',
          podNamespace: 'default',
          podName: 'new',
          from: { podInterfaceID: 'gone-s1-eth0', infraContainerID: 'gone-s1' },
        },
      ]);
      expect(p.suspects).to.deep.equal([]);
    });

    it('conflicts: held by another live pod, claimed twice, not in the NNC - reported, the address held', () => {
      const p = plan(
        [ip(2, 'owner'), ip(3)],
        [
          pod('owner'),
          pod('thief', { ips: ['10.0.0.2'] }),
          pod('younger', { ips: ['10.0.0.3'], t: '2026-01-01T00:00:02Z' }),
          pod('older', { ips: ['10.0.0.3'], t: '2026-01-01T00:00:01Z' }),
          pod('outsider', { ips: ['192.168.9.9'] }),
        ],
      );
      expect(p.conflicts).to.deep.equal([
        {
          ip: '10.0.0.2',
          pods: ['default/thief'],
          reason: 'held in the store by live pod default/owner',
        },
        { ip: '10.0.0.3', pods: ['default/older', 'default/younger'], reason: 'claimed by 2 pods' },
        { ip: '192.168.9.9', pods: ['default/outsider'], reason: 'not in the NodeNetworkConfig' },
      ]);
      // The doubly claimed Available address is held: adopted by the older claimant.
      expect(p.adopt).to.deep.equal([
        { ip: '10.0.0.3', podNamespace: 'default', podName: 'older' },
      ]);
    });

    it('knows an address however it is written', () => {
      const p = plan(
        [{ ...ip(2), ip: 'fd00::2' }, ip(3, 'web')],
        [pod('a', { ips: ['fd00:0:0::0002'] }), pod('web', { ips: ['::ffff:10.0.0.3'] })],
      );
      expect(p.adopt).to.deep.equal([{ ip: 'fd00::2', podNamespace: 'default', podName: 'a' }]);
      expect(p.conflicts).to.deep.equal([]);
    });

    it("a stale status (the pod's newer sandbox got another address) is not adopted", () => {
      const p = plan([ip(2), ip(3, 'web', 'web-s2')], [pod('web', { ips: ['10.0.0.2'] })]);
      expect(p.adopt).to.deep.equal([]);
    });
  });

  describe('dual-stack pods', () => {
    const v6 = (n: number, holder?: string): IpRecord => ({
      ...ip(n, holder),
      id: `id6-${n}`,
      ip: `fd00::${n}`,
    });

    it('adopts both families a pod reports, and nothing it already holds', () => {
      const p = plan([ip(2), v6(2)], [pod('web', { ips: ['10.0.0.2', 'fd00::2'] })]);
      expect(p.adopt.map((a) => [a.ip, a.podName])).to.deep.equal([
        ['10.0.0.2', 'web'],
        ['fd00::2', 'web'],
      ]);
      expect(
        plan([ip(2, 'web'), v6(2, 'web')], [pod('web', { ips: ['10.0.0.2', 'fd00::2'] })]).adopt,
      ).to.deep.equal([]);
    });

    it('a status that reports one family of the two the store gave waits, and keeps both', () => {
      // The kubelet has not written the new sandbox's addresses yet: IPv4 is an older one.
      const p = plan([ip(2, 'web'), v6(2, 'web'), ip(3)], [pod('web', { ips: ['10.0.0.3'] })]);
      expect(p.adopt).to.deep.equal([]);
      expect(p.conflicts).to.deep.equal([]);
      expect(p.suspects).to.deep.equal([]);
    });

    it("a gone pod's two addresses are suspects from the same moment", () => {
      const p = plan([ip(2, 'gone'), v6(2, 'gone')], [], { now: 1_000 });
      expect(p.suspects.map((s) => [s.record.ip, s.reclaimAt])).to.deep.equal([
        ['10.0.0.2', 61_000],
        ['fd00::2', 61_000],
      ]);
    });
  });
});
