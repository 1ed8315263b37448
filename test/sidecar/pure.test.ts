// The sidecar's pure helpers: demand, exhaustion, the apply body, the writer's
// error mapping, and the Event texts.
import { expect } from 'chai';
import fc from 'fast-check';
import { SpecWriteError } from '../../src/monitor/ports.ts';
import type { ReconcileOutcome } from '../../src/monitor/types.ts';
import {
  countDemand,
  malformedPodReason,
  nodeSubnetName,
  podNeedsIp,
  subnetExhausted,
} from '../../src/sidecar/demand.ts';
import { monitorEvent, outcomeEvent, REASONS, vanishedEvent } from '../../src/sidecar/events.ts';
import { applyBody, createNncWriter, type ApplyApi } from '../../src/sidecar/nnc-writer.ts';

const pod = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  metadata: { name: 'p', namespace: 'default' },
  spec: { nodeName: 'n1' },
  status: { phase: 'Running' },
  ...over,
});

describe('sidecar demand', () => {
  it('counts pods that need an IP: not hostNetwork, not finished', () => {
    const pods = [
      pod(),
      pod({ status: { phase: 'Pending' } }),
      pod({ status: undefined }),
      pod({ spec: { nodeName: 'n1', hostNetwork: true } }),
      pod({ status: { phase: 'Succeeded' } }),
      pod({ status: { phase: 'Failed' } }),
      pod({ spec: { nodeName: 'other' } }),
    ];
    expect(countDemand(pods, 'n1')).to.equal(3);
  });

  it('never counts malformed pods and says why', () => {
    expect(malformedPodReason(null)).to.equal('not an object');
    expect(malformedPodReason({ spec: {} })).to.equal('metadata is missing');
    expect(malformedPodReason({ metadata: {}, spec: {} })).to.equal('metadata.name is missing');
    expect(malformedPodReason({ metadata: { name: 'x' } })).to.equal('spec is missing');
    expect(podNeedsIp({ metadata: { name: 'x' } }, 'n1')).to.equal(false);
  });

  it('is never negative, never above the pod count, and never throws (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.anything()), (list) => {
        const n = countDemand(list as never[], 'n1');
        return Number.isInteger(n) && n >= 0 && n <= list.length;
      }),
    );
  });
});

describe('sidecar exhaustion', () => {
  const css = (name: string, exhausted?: boolean) => ({
    metadata: { name },
    ...(exhausted === undefined ? {} : { status: { exhausted } }),
  });

  it('mode name: only the CSS named as the node subnet counts', () => {
    const list = [css('subnet-b', true), css('subnet-a', false)];
    expect(subnetExhausted(list, 'subnet-a', 'name')).to.equal(false);
    expect(subnetExhausted([...list, css('subnet-a', true)], 'subnet-a', 'name')).to.equal(true);
    expect(subnetExhausted(list, undefined, 'name')).to.equal(false);
  });

  it('mode any: any exhausted CSS counts', () => {
    expect(subnetExhausted([css('x', true)], 'subnet-a', 'any')).to.equal(true);
    expect(subnetExhausted([css('x'), css('y', false)], 'subnet-a', 'any')).to.equal(false);
  });

  it('the node subnet is the dynamic container subnetName', () => {
    expect(
      nodeSubnetName({
        metadata: { name: 'n' },
        status: {
          networkContainers: [
            { id: 's', assignmentMode: 'static', subnetName: 'static-net' },
            { id: 'd', assignmentMode: 'dynamic', subnetName: 'dyn-net' },
          ],
        },
      }),
    ).to.equal('dyn-net');
    expect(nodeSubnetName({ metadata: { name: 'n' } })).to.equal(undefined);
  });
});

describe('sidecar NNC writer', () => {
  it('sends ipsNotInUse only when non-empty', () => {
    expect(applyBody('n1', 'kube-system', { requestedIPCount: 5, ipsNotInUse: [] })).to.deep.equal({
      apiVersion: 'acn.azure.com/v1alpha',
      kind: 'NodeNetworkConfig',
      metadata: { name: 'n1', namespace: 'kube-system' },
      spec: { requestedIPCount: 5 },
    });
    const body = applyBody('n1', 'ns', { requestedIPCount: 5, ipsNotInUse: ['a'] }) as {
      spec: object;
    };
    expect(body.spec).to.deep.equal({ requestedIPCount: 5, ipsNotInUse: ['a'] });
  });

  it('applies as azure-cns with force and resolves the generation', async () => {
    const calls: Record<string, unknown>[] = [];
    const api: ApplyApi = {
      patchNamespacedCustomObject: (req) => {
        calls.push(req);
        return Promise.resolve({ metadata: { generation: 7 } });
      },
    };
    const writer = createNncWriter({ api, name: 'n1', namespace: 'kube-system' });
    expect(await writer.writeSpec({ requestedIPCount: 3, ipsNotInUse: [] })).to.deep.equal({
      generation: 7,
    });
    expect(calls[0]).to.include({ fieldManager: 'azure-cns', force: true, name: 'n1' });
  });

  it('sends nothing while the NNC is gone (server-side apply would create it)', async () => {
    let calls = 0;
    const api: ApplyApi = {
      patchNamespacedCustomObject: () => {
        calls++;
        return Promise.resolve({});
      },
    };
    let present = false;
    const writer = createNncWriter({
      api,
      name: 'n1',
      namespace: 'kube-system',
      present: () => present,
    });
    const err = await writer.writeSpec({ requestedIPCount: 3, ipsNotInUse: [] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(SpecWriteError);
    expect((err as Error).message).to.match(/kube-system\/n1 is being deleted or gone/);
    expect(calls).to.equal(0);
    present = true;
    await writer.writeSpec({ requestedIPCount: 3, ipsNotInUse: [] });
    expect(calls).to.equal(1);
  });

  it('turns API errors into SpecWriteError with status and Retry-After', async () => {
    const api: ApplyApi = {
      patchNamespacedCustomObject: () =>
        Promise.reject(
          Object.assign(new Error('HTTP-Code: 429'), {
            code: 429,
            headers: { 'retry-after': '3' },
            body: '{"message":"slow down"}',
          }),
        ),
    };
    const writer = createNncWriter({ api, name: 'n1', namespace: 'kube-system' });
    const err = await writer.writeSpec({ requestedIPCount: 3, ipsNotInUse: [] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(SpecWriteError);
    expect((err as SpecWriteError).statusCode).to.equal(429);
    expect((err as SpecWriteError).retryAfterSeconds).to.equal(3);
    expect((err as SpecWriteError).message).to.contain('slow down');
  });
});

describe('sidecar Events', () => {
  const outcome = (over: Partial<ReconcileOutcome>): ReconcileOutcome => ({
    kind: 'scaled',
    at: 0,
    demand: 8,
    exhausted: false,
    scaler: { batch: 10, buffer: 0.5, max: 250 },
    target: 20,
    applied: 20,
    from: 10,
    to: 20,
    delta: 10,
    marked: 0,
    wrote: true,
    ...over,
  });

  it('pool scaled names from, to and demand; other outcomes record nothing', () => {
    const e = outcomeEvent(outcome({}));
    expect(e).to.deep.include({ type: 'Normal', reason: REASONS.scaled });
    expect(e?.message).to.equal('pool scaled from 10 to 20 IPs (demand 8)');
    expect(outcomeEvent(outcome({ kind: 'at-target', wrote: false }))).to.equal(undefined);
  });

  it('scaler invalid names the field; mark failures and vanished IPs are warnings', () => {
    const s = monitorEvent({
      type: 'scaler-invalid',
      field: 'maxIPCount',
      value: -1,
      message: 'maxIPCount -1 is not a positive number, using 250',
    });
    expect(s?.type).to.equal('Warning');
    expect(s?.message).to.contain('status.scaler.maxIPCount');
    expect(monitorEvent({ type: 'mark-failed', count: 3, error: 'no' })?.reason).to.equal(
      REASONS.markFailed,
    );
    expect(monitorEvent({ type: 'ready', request: 1 })).to.equal(undefined);
    const v = vanishedEvent([
      {
        id: 'a',
        ip: '10.0.0.9',
        ncId: 'nc',
        state: 'Assigned',
        updatedAt: 0,
        pod: { podInterfaceID: 'i', infraContainerID: 'c', podName: 'web', podNamespace: 'd' },
      },
    ]);
    expect(v?.message).to.contain('Assigned IP vanished from status: 10.0.0.9 (a, pod d/web)');
    expect(vanishedEvent([])).to.equal(undefined);
  });
});

describe('sidecar NNC writer: clearing ids someone else set', () => {
  it('sends [] when the observed spec still carries ids, omits the field otherwise', () => {
    const spec = { requestedIPCount: 5, ipsNotInUse: [] };
    expect(applyBody('n', 'ns', spec, ['x'])).to.have.nested.property('spec.ipsNotInUse');
    expect(
      (applyBody('n', 'ns', spec, ['x']) as { spec: { ipsNotInUse: string[] } }).spec.ipsNotInUse,
    ).to.deep.equal([]);
    expect(applyBody('n', 'ns', spec, [])).not.to.have.nested.property('spec.ipsNotInUse');
  });
});
