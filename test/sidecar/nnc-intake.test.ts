// The NNC intake (src/sidecar/nnc-intake.ts): each NNC syncs the store
// first, then reaches the monitor, in that order, whoever listens; an
// unfinished NNC before the first usable one is waited for; what the writer,
// the Events and the node API's gate read comes from the intake's own state.
import { expect } from 'chai';
import { Subject } from 'rxjs';
import type { FollowResult, NncFollower } from '../../src/ipstore/follow-nnc.ts';
import type { PodFollower } from '../../src/ipstore/follow-pods.ts';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import { NncIntake } from '../../src/sidecar/nnc-intake.ts';

const scaler = { batchSize: 16, requestThresholdPercent: 50, releaseThresholdPercent: 150 };
const dynamic = { id: 'nc', assignmentMode: 'dynamic', ipAssignments: [] };
const nnc = (rv: string, status: unknown, extra: object = {}): NodeNetworkConfig =>
  ({
    metadata: { name: 'n', namespace: 'kube-system', resourceVersion: rv, uid: 'u', ...extra },
    spec: { ipsNotInUse: [`id-${rv}`] },
    status,
  }) as NodeNetworkConfig;
const usable = (rv: string, extra: object = {}) =>
  nnc(rv, { scaler, networkContainers: [dynamic] }, extra);

/** An intake over followers that write what happens, in order, to `steps`. */
function intakeWith(result: (n: NodeNetworkConfig) => FollowResult = () => 'synced') {
  const steps: string[] = [];
  const follower: NncFollower = {
    follow: (n) => {
      steps.push(`store follows ${n.metadata.resourceVersion}`);
      return result(n);
    },
    healthy: () => true,
  };
  const pods = {
    inventorySynced: () => steps.push('pods: inventory synced'),
  } as unknown as PodFollower;
  const intake = new NncIntake({ namespace: 'kube-system', nodeName: 'n', follower, pods });
  const errors: unknown[] = [];
  intake.toMonitor$.subscribe({
    next: (n) => steps.push(`monitor gets ${n.metadata.resourceVersion}`),
    error: (err: unknown) => errors.push(err),
  });
  return { intake, steps, errors };
}

describe('sidecar/nnc-intake', () => {
  it('syncs the store before the monitor gets the NNC, and has pods adopt after a sync', () => {
    const { intake, steps } = intakeWith((n) =>
      n.metadata.resourceVersion === '2' ? 'unchanged' : 'synced',
    );
    intake.onNnc(usable('1'));
    intake.onNnc(usable('2'));
    expect(steps).to.deep.equal([
      'store follows 1',
      'pods: inventory synced',
      'monitor gets 1',
      'store follows 2',
      'monitor gets 2',
    ]);
    expect(intake.current()?.metadata.resourceVersion).to.equal('2');
  });

  it('waits for an unfinished NNC until the first usable one, then passes everything on', () => {
    const { intake, steps } = intakeWith();
    intake.onNnc(nnc('1', undefined));
    intake.onNnc(nnc('2', { scaler }));
    intake.onNnc(nnc('3', 'malformed'));
    intake.onNnc(usable('4'));
    intake.onNnc(nnc('5', undefined));
    expect(steps.filter((s) => s.startsWith('monitor'))).to.deep.equal([
      'monitor gets 3',
      'monitor gets 4',
      'monitor gets 5',
    ]);
    expect(
      steps.filter((s) => s.startsWith('store')),
      'the store follows each',
    ).to.have.length(5);
    expect(intake.current()?.metadata.resourceVersion, 'the last one seen').to.equal('5');
  });

  it('says the NNC is gone or going from the cache and whether one was taken', () => {
    const { intake } = intakeWith();
    expect(intake.goneReason(), 'none yet, none listed').to.equal(undefined);
    intake.onListed(usable('1'));
    expect(intake.goneReason(), 'listed, not taken yet').to.equal(undefined);
    intake.onNnc(usable('1'));
    intake.onListed(undefined);
    expect(intake.goneReason()).to.equal(
      'NodeNetworkConfig kube-system/n is gone: waiting for the fulfiller to make it again',
    );
    intake.onListed(usable('2', { deletionTimestamp: '2026-11-28T00:00:00Z' }));
    expect(intake.goneReason()).to.equal(
      'NodeNetworkConfig kube-system/n is being deleted: waiting for its successor',
    );
    intake.onListed(usable('3'));
    expect(intake.goneReason()).to.equal(undefined);
  });

  it('takes a watch through onNnc; a step that throws ends it as the monitor input failing', () => {
    const watch = new Subject<NodeNetworkConfig>();
    const { intake, steps, errors } = intakeWith((n) => {
      if (n.metadata.resourceVersion === '2') throw new Error('disk on fire');
      return 'synced';
    });
    intake.take(watch);
    watch.next(usable('1'));
    watch.next(usable('2'));
    watch.next(usable('3'));
    expect(steps).to.deep.equal([
      'store follows 1',
      'pods: inventory synced',
      'monitor gets 1',
      'store follows 2',
    ]);
    expect(errors.map((e) => (e as Error).message)).to.deep.equal(['disk on fire']);
  });

  it('passes the watch ending on to the monitor', () => {
    const watch = new Subject<NodeNetworkConfig>();
    const { intake } = intakeWith();
    let ended = false;
    intake.toMonitor$.subscribe({ complete: () => (ended = true) });
    intake.take(watch);
    watch.complete();
    expect(ended).to.equal(true);
  });
});
