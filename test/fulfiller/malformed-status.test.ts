// Found by the CRD-object fuzz (test/fuzz/): a status a foreign writer left on
// an NNC - an IP assignment that is null, ids that are not UUIDs, an address
// listed twice or malformed - crashed the fulfiller process (TypeError in
// containerFrom, out of the NNC watch's subscriber), or would have been
// written back as the fulfiller's own record; so were addresses outside its
// pod subnet (the 10,000-object run) and a dynamic container with an empty or
// no primary IP (a 2,000-object run: written back as ""). The fulfiller
// refuses such a status: it writes nothing for the node, logs the rejection
// once naming the field, and serves the node again once its status is valid.
import { expect } from 'chai';
import { makeFulfillerConfig } from '../../src/fulfiller/config.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger } from '../../src/log/logger.ts';
import type { NncStatus, NodeNetworkConfig } from '../../src/nnc/types.ts';
import { FakeClock } from './fake-clock.ts';
import { FakeCluster } from './fake-cluster.ts';
import { newFulfiller } from './harness.ts';

function start() {
  const cluster = new FakeCluster();
  const config = makeFulfillerConfig({ subnet: '10.240.0.0/24', minIntervalMs: 0 });
  const capture = new CaptureTransport();
  const logger = createLogger({ level: 'debug', transports: [capture] });
  const { fulfiller, settle } = newFulfiller({ cluster, clock: new FakeClock(), config, logger });
  return { cluster, fulfiller, capture, settle };
}

/** A foreign writer replaces the status; the watch delivers it. */
function foreignStatus(cluster: FakeCluster, name: string, edit: (s: NncStatus) => unknown): void {
  const nnc = structuredClone(cluster.nncs.get(name)!) as NodeNetworkConfig;
  (nnc as { status?: unknown }).status = edit(structuredClone(nnc.status!));
  nnc.metadata.resourceVersion = cluster.nextRv();
  cluster.nncs.set(name, nnc);
  cluster.deliver({ kind: 'nnc', type: 'upsert', object: nnc });
}

const nc0 = (s: NncStatus) => s.networkContainers![0]!;

describe('fulfiller: a malformed status left by a foreign writer (fuzz finding)', () => {
  const cases: [string, string, (s: NncStatus) => unknown][] = [
    [
      'an IP assignment that is null',
      'status.networkContainers[0].ipAssignments[1]',
      (s) => (((nc0(s).ipAssignments as unknown[])[1] = null), s),
    ],
    [
      'an id that is not a UUID',
      'status.networkContainers[0].ipAssignments[0].name',
      (s) => ((nc0(s).ipAssignments![0]!.name = 'not-a-uuid'), s),
    ],
    [
      'one address under two ids',
      'status.networkContainers[0].ipAssignments[1].ip',
      (s) => ((nc0(s).ipAssignments![1]!.ip = nc0(s).ipAssignments![0]!.ip), s),
    ],
    [
      'a malformed address',
      'status.networkContainers[0].ipAssignments[2].ip',
      (s) => ((nc0(s).ipAssignments![2]!.ip = '10.240.0.999'), s),
    ],
    [
      'an address outside the pod subnet (found by the 10,000-object fuzz)',
      'status.networkContainers[0].ipAssignments[0].ip',
      (s) => ((nc0(s).ipAssignments![0]!.ip = '10.99.0.5'), s),
    ],
    [
      "the pod subnet's network address",
      'status.networkContainers[0].ipAssignments[3].ip',
      (s) => ((nc0(s).ipAssignments![3]!.ip = '10.240.0.0'), s),
    ],
    [
      'a primary IP outside the pod subnet',
      'status.networkContainers[0].primaryIP',
      (s) => ((nc0(s).primaryIP = '192.168.7.1'), s),
    ],
    [
      'a dynamic container whose primary IP is empty (found by a 2,000-object fuzz)',
      'status.networkContainers[0].primaryIP',
      (s) => ((nc0(s).primaryIP = ''), s),
    ],
    [
      'a dynamic container without a primary IP',
      'status.networkContainers[0].primaryIP',
      (s) => (delete nc0(s).primaryIP, s),
    ],
    [
      'a container that is not an object',
      'status.networkContainers[1]',
      (s) => ((s.networkContainers as unknown[]).push(7), s),
    ],
  ];
  for (const [what, field, edit] of cases) {
    it(`${what}: nothing written, one rejection naming ${field}, served again once valid`, async () => {
      const { cluster, fulfiller, capture, settle } = start();
      cluster.addNode('n1');
      await settle();
      cluster.setSpec('n1', { requestedIPCount: 4 });
      await settle();
      const valid = structuredClone(cluster.nncs.get('n1')!);
      expect(nc0(valid.status!).ipAssignments).to.have.length(4);
      const writes = cluster.writes;

      foreignStatus(cluster, 'n1', edit);
      await settle();
      cluster.setSpec('n1', { requestedIPCount: 6 }); // more work for a status it refuses
      await settle();
      fulfiller.resync();
      await settle();
      expect(cluster.writes, 'status writes on a refused status').to.equal(writes);
      const said = capture.find('rejected NodeNetworkConfig');
      expect(said.map((r) => r.field)).to.deep.equal([field]);
      expect(said[0]).to.include({ name: 'n1', kind: 'NodeNetworkConfig' });

      // Valid again (the foreign writer put the status back): served.
      foreignStatus(cluster, 'n1', () => structuredClone(valid.status));
      await settle();
      expect(nc0(cluster.nncs.get('n1')!.status!).ipAssignments).to.have.length(6);
      for (const a of nc0(cluster.nncs.get('n1')!.status!).ipAssignments!)
        expect(a.name).to.match(/^[0-9a-f-]{36}$/);
      await fulfiller.stop();
    });
  }
});
