// What an operator reads about leaks and adoptions: the Event texts, and the
// reporter's one warning line, one Event and one count per notice.
import { expect } from 'chai';
import type { IpRecord } from '../../src/ipstore/types.ts';
import type { EventDetails } from '../../src/kube/events.ts';
import { LeakMetrics } from '../../src/metrics/leaks.ts';
import {
  adoptedEvent,
  conflictEvent,
  LeakReporter,
  reclaimedEvent,
} from '../../src/sidecar/leaks.ts';
import { Registry } from 'prom-client';
import { captureLogger } from '../monitor/fakes.ts';

const record: IpRecord = {
  id: 'ip-7',
  ip: '10.0.0.7',
  ncId: 'nc',
  state: 'Assigned',
  updatedAt: 0,
  pod: {
    podInterfaceID: 'web-s1-eth0',
    infraContainerID: 'web-s1',
    podName: 'web',
    podNamespace: 'd',
  },
};

describe('sidecar/leaks', () => {
  it('names pod, IP and reason in the Events', () => {
    expect(reclaimedEvent(record, 'pod-deleted', 61_234)).to.deep.equal({
      type: 'Warning',
      reason: 'LeakedIPReclaimed',
      message:
        'released leaked IP 10.0.0.7 (ip-7) of pod d/web: its pod is gone from the node for 61.2 s and no CNI release came',
    });
    expect(reclaimedEvent(record, 'sandbox-recreated').message).to.equal(
      'released leaked IP 10.0.0.7 (ip-7) of pod d/web: its pod asked again under a new sandbox and no CNI release came',
    );
    const { pod: _p, ...free } = record;
    expect(adoptedEvent(record, { ...free, state: 'Available' })).to.deep.equal({
      type: 'Warning',
      reason: 'PodIPAdopted',
      message:
        'pod d/web reports 10.0.0.7 (ip-7), which the IP store had Available: adopted, never handed to another pod',
    });
    expect(
      conflictEvent({ ip: '10.0.0.9', pods: ['d/a', 'd/b'], reason: 'claimed by 2 pods' }).message,
    ).to.equal(
      'address 10.0.0.9 reported by pod d/a, d/b: claimed by 2 pods; the address is held, not given out',
    );
  });

  it('one warning line, one Event and one count per notice', async () => {
    const { logger, capture } = captureLogger();
    const events: EventDetails[] = [];
    const registry = new Registry();
    const reporter = new LeakReporter({
      logger,
      record: (e) => events.push(e),
      metrics: new LeakMetrics(registry),
    });
    reporter.notice({ type: 'reclaimed', record, reason: 'pod-completed', absentMs: 5_000 });
    reporter.reclaimed(record, 'sandbox-recreated');
    reporter.notice({ type: 'adopted', record, previous: { ...record, state: 'Available' } });
    reporter.notice({ type: 'conflict', conflict: { ip: '1.2.3.4', pods: ['d/x'], reason: 'r' } });
    expect(capture.records.map((r) => [r.level, r.msg])).to.deep.equal([
      ['warn', 'leaked IP reclaimed'],
      ['warn', 'leaked IP reclaimed'],
      ['warn', 'pod IP adopted'],
      ['warn', 'pod IP conflict'],
    ]);
    expect(capture.records[0]).to.deep.include({
      pod: 'd/web',
      ip: '10.0.0.7',
      reason: 'pod-completed',
    });
    expect(events.map((e) => e.reason)).to.deep.equal([
      'LeakedIPReclaimed',
      'LeakedIPReclaimed',
      'PodIPAdopted',
      'PodIPConflict',
    ]);
    expect(reporter.counts).to.deep.equal({
      reclaimed: { 'pod-deleted': 0, 'pod-completed': 1, 'sandbox-recreated': 1 },
      adopted: 1,
      conflicts: 1,
    });
    const text = await registry.metrics();
    expect(text).to.match(/pool_monitor_leaked_ips_reclaimed_total\{reason="pod-completed"\} 1/);
    expect(text).to.match(/pool_monitor_leaked_ips_reclaimed_total\{reason="pod-deleted"\} 0/);
    expect(text).to.match(/pool_monitor_ips_adopted_total 1/);
    expect(text).to.match(/pool_monitor_pod_ip_conflicts_total 1/);
  });
});
