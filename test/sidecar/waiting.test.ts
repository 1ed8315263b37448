// The pure part of "say why it waits": which NNCs are waited for, which are
// invalid, the wording, and the once-a-minute notice.
import { expect } from 'chai';
import type { NodeNetworkConfig } from '../../src/nnc/types.ts';
import {
  listReason,
  nncGoneReason,
  nncReadiness,
  WaitNotice,
  waitReason,
  whyNotReady,
} from '../../src/sidecar/waiting.ts';

const nnc = (status: unknown): NodeNetworkConfig =>
  ({ metadata: { name: 'n' }, spec: {}, status }) as NodeNetworkConfig;
const scaler = { batchSize: 16, requestThresholdPercent: 50, releaseThresholdPercent: 150 };
const dynamic = { id: 'nc', assignmentMode: 'dynamic', ipAssignments: [] };

describe('sidecar/waiting', () => {
  it('hands out no address while the NNC is being deleted or gone after it was there', () => {
    const live = nnc({});
    const going = { ...live, metadata: { name: 'n', deletionTimestamp: '2026-11-28T00:00:00Z' } };
    expect(nncGoneReason(live, true, 'kube-system', 'n')).to.equal(undefined);
    expect(nncGoneReason(undefined, false, 'kube-system', 'n')).to.equal(undefined);
    expect(nncGoneReason(undefined, true, 'kube-system', 'n')).to.equal(
      'NodeNetworkConfig kube-system/n is gone: waiting for the fulfiller to make it again',
    );
    expect(nncGoneReason(going, true, 'kube-system', 'n')).to.equal(
      'NodeNetworkConfig kube-system/n is being deleted: waiting for its successor',
    );
  });

  it('waits for an NNC that is not there or not finished, in words', () => {
    const kinds = (s: unknown) => nncReadiness(nnc(s), 'kube-system', 'n');
    expect(nncReadiness(undefined, 'kube-system', 'n')).to.deep.equal({
      kind: 'waiting',
      reason: 'waiting for NodeNetworkConfig kube-system/n to be created (by the fulfiller)',
    });
    expect(kinds(undefined).kind).to.equal('waiting');
    expect(kinds(null).kind).to.equal('waiting');
    expect(kinds({}).kind).to.equal('waiting');
    expect(kinds({ scaler }).kind).to.equal('waiting');
    expect(kinds({ scaler, networkContainers: [] }).kind).to.equal('waiting');
    expect(
      kinds({ scaler, networkContainers: [{ ...dynamic, assignmentMode: 'static' }] }),
    ).to.deep.include({ kind: 'waiting' });
    expect(kinds({ scaler, networkContainers: [dynamic] })).to.deep.equal({ kind: 'usable' });
  });

  it('calls only a malformed NNC invalid', () => {
    const kinds = (s: unknown) => nncReadiness(nnc(s), 'kube-system', 'n');
    expect(kinds('text')).to.deep.equal({ kind: 'invalid', reason: 'status is not an object' });
    expect(kinds({ scaler: 5 })).to.deep.equal({
      kind: 'invalid',
      reason: 'status.scaler is not an object',
    });
    expect(kinds({ scaler, networkContainers: {} })).to.deep.equal({
      kind: 'invalid',
      reason: 'status.networkContainers is not a list',
    });
  });

  it('names the lists still missing, and the last error', () => {
    expect(listReason([], 'x')).to.equal(undefined);
    expect(listReason(['pods', 'css'], 'fetch failed')).to.equal(
      "waiting for the API server's first list of pods, css (last error: fetch failed)",
    );
    const watched = (synced: boolean, list: NodeNetworkConfig[] = []) => ({
      pods: { synced: true },
      nnc: { synced, list: () => list },
      css: { synced: true },
    });
    expect(waitReason(watched(false), undefined, 'ns', 'n').reason).to.equal(
      "waiting for the API server's first list of nnc",
    );
    expect(waitReason(watched(true), undefined, 'ns', 'n').reason).to.match(/to be created/);
    expect(waitReason(watched(true, [nnc({ scaler: 'x' })]), undefined, 'ns', 'n')).to.deep.equal({
      reason: 'NodeNetworkConfig ns/n is invalid: status.scaler is not an object',
      say: false,
    });
  });

  it('says a reason once, again only after the interval, a new one at once', () => {
    const n = new WaitNotice(60_000);
    expect(n.shouldSay('a', 0)).to.equal(true);
    expect(n.shouldSay('a', 59_999)).to.equal(false);
    expect(n.shouldSay('b', 60_000)).to.equal(true);
    expect(n.shouldSay('b', 119_999)).to.equal(false);
    expect(n.shouldSay('b', 120_000)).to.equal(true);
    expect(n.shouldSay(undefined, 120_001)).to.equal(false);
    expect(n.shouldSay('b', 120_002)).to.equal(true);
  });
});

describe('sidecar/waiting: readiness derived from its state', () => {
  const listed = {
    pods: { synced: true },
    nnc: { synced: true, list: () => [] },
    css: { synced: false },
  };
  const state = {
    stopping: false,
    monitorReady: false,
    watches: undefined,
    lastWatchError: undefined,
  };
  it('is stopping before anything else, ready once the monitor is, else says what it waits for', () => {
    expect(
      whyNotReady({ ...state, stopping: true, monitorReady: true }, 'kube-system', 'n'),
    ).to.deep.equal({ reason: 'stopping', say: false });
    expect(whyNotReady({ ...state, monitorReady: true }, 'kube-system', 'n')).to.equal(undefined);
    expect(whyNotReady(state, 'kube-system', 'n')).to.deep.equal({
      reason: 'starting',
      say: false,
    });
    expect(
      whyNotReady({ ...state, watches: listed, lastWatchError: 'refused' }, 'kube-system', 'n'),
    ).to.deep.equal({
      reason: "waiting for the API server's first list of css (last error: refused)",
      say: true,
    });
  });
});
