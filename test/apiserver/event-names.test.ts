// Events carry a name prefix their writer owns: the sidecar of node N writes
// only Events named pool-monitor-sidecar.N.*, the fulfiller's are
// pool-monitor-fulfiller.*. RBAC cannot say this (resourceNames cannot
// restrict create, and the names are not known in advance), so the shipped
// ValidatingAdmissionPolicy of manifests/sidecar/ enforces it for the
// sidecar's service account: node A can neither forge nor overwrite node
// B's or the fulfiller's Events. Checked over HTTP with the shipped objects
// and the names the product's recorders make.
import { expect } from 'chai';
import { createEventRecorder, eventName, type EventsApi } from '../../src/kube/events.ts';
import { FULFILLER_EVENT_PREFIX, sidecarEventPrefix } from '../../src/kube/event-names.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { strictServer, type StrictServer } from './access-helpers.ts';
import { applySidecarManifests, sidecarToken } from './manifest-helpers.ts';

const EVENTS = '/api/v1/namespaces/kube-system/events';
const POLICY = 'pool-monitor-sidecar-own-events';
const event = (name: string) => ({
  metadata: { name },
  involvedObject: { kind: 'NodeNetworkConfig', name: 'node-a', namespace: 'kube-system' },
  reason: 'PoolScaled',
  message: 'm',
  type: 'Normal',
});

describe('events: the recorder names Events with its writer prefix', () => {
  it('createEventRecorder({namePrefix}) creates PREFIX + object + "." + suffix', async () => {
    const names: string[] = [];
    const api: EventsApi = {
      createNamespacedEvent: ({ body }) => (
        names.push(body.metadata?.name ?? ''),
        Promise.resolve(body)
      ),
      replaceNamespacedEvent: ({ body }) => Promise.resolve(body),
    };
    const r = createEventRecorder({
      api,
      component: 'azure-cns',
      host: 'node-a',
      namePrefix: sidecarEventPrefix('node-a'),
      logger: silentLogger(),
    });
    await r.recordEvent(
      {
        apiVersion: 'acn.azure.com/v1alpha',
        kind: 'NodeNetworkConfig',
        name: 'node-a',
        namespace: 'kube-system',
      },
      { type: 'Normal', reason: 'PoolScaled', message: 'm' },
    );
    expect(names).to.have.length(1);
    expect(names[0]).to.match(/^pool-monitor-sidecar\.node-a\.node-a\.[0-9a-f]+$/);
  });

  it('a name stays a DNS subdomain of at most 253 characters', () => {
    const long = 'n'.repeat(250);
    const name = eventName(long, new Date(), () => 0.5, sidecarEventPrefix('node-a'));
    expect(name.length).to.be.at.most(253);
    expect(name).to.match(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
  });
});

describe('events: the shipped policy keeps each writer to its own Event names (HTTP)', function () {
  this.timeout(20_000);
  let s: StrictServer;
  let a: string;
  before(async () => {
    s = await strictServer({}, { authorizationMode: 'RBAC' });
    await applySidecarManifests(s, ['serviceaccount.yaml', 'rbac.yaml', 'event-names-policy.yaml']);
    await s.admin('POST', '/api/v1/nodes', { metadata: { name: 'node-a' } });
    await s.admin('POST', '/api/v1/namespaces/kube-system/pods', {
      metadata: { name: 'sidecar-node-a' },
      spec: { serviceAccountName: 'pool-monitor', nodeName: 'node-a', containers: [] },
    });
    a = await sidecarToken(s, { apiVersion: 'v1', kind: 'Pod', name: 'sidecar-node-a' });
  });
  after(() => s.close());

  const denied = (name: string) =>
    `events "${name}" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: the sidecar of node node-a may write only Events named pool-monitor-sidecar.node-a.*, not ${name}`;

  it("node A's sidecar creates and updates its own Events", async () => {
    const name = eventName('node-a', new Date(), Math.random, sidecarEventPrefix('node-a'));
    const c = await s.as(a, 'POST', EVENTS, event(name));
    expect(c.status, JSON.stringify(c.body)).to.equal(201);
    const u = await s.as(a, 'PUT', `${EVENTS}/${name}`, { ...c.body, count: 2 });
    expect(u.status, JSON.stringify(u.body)).to.equal(200);
  });

  for (const [whose, name] of [
    [
      "node B's sidecar",
      eventName('node-b', new Date(), Math.random, sidecarEventPrefix('node-b')),
    ],
    ['the fulfiller', eventName('node-a', new Date(), Math.random, FULFILLER_EVENT_PREFIX)],
    ['nobody in particular (kubelet-style)', eventName('node-a', new Date())],
  ] as const)
    it(`node A's sidecar may not create or overwrite an Event named as ${whose}'s`, async () => {
      const c = await s.as(a, 'POST', EVENTS, event(name));
      expect(c.status).to.equal(403);
      expect(c.body.message).to.equal(denied(name));
      const made = await s.admin('POST', EVENTS, event(name));
      expect(made.status).to.equal(201);
      const u = await s.as(a, 'PUT', `${EVENTS}/${name}`, { ...made.body, message: 'forged' });
      expect(u.status).to.equal(403);
      expect((await s.admin('GET', `${EVENTS}/${name}`)).body.message).to.equal('m');
    });
});
