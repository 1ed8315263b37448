// Events carry a name prefix their writer owns: the sidecar of node N writes
// only Events named pool-monitor-sidecar.N.REST (no dot in REST, so a node
// named n1 cannot write node n1.x's), the fulfiller's are
// pool-monitor-fulfiller.*. RBAC cannot say this (resourceNames cannot
// restrict create, and the names are not known in advance), so the shipped
// ValidatingAdmissionPolicy of manifests/sidecar/ enforces it for the
// sidecar's service account, and keeps the content to the node's own: about
// its own NNC, reported by the sidecar, on UPDATE as stored too. Checked
// over HTTP with RBAC, the shipped objects, pod- and node-bound tokens, and
// the Events the product's recorder makes.
import { KubeConfig, type CoreV1Event } from '@kubernetes/client-node';
import { expect } from 'chai';
import { createEventRecorder, eventName, type EventsApi } from '../../src/kube/events.ts';
import {
  FULFILLER_EVENT_PREFIX,
  SIDECAR_EVENT_COMPONENT,
  sidecarEventPrefix,
  sidecarOwnsEventName,
} from '../../src/kube/event-names.ts';
import { CaptureTransport } from '../../src/log/capture.ts';
import { createLogger, silentLogger } from '../../src/log/logger.ts';
import { GROUP, NNC_KIND, NNC_VERSION } from '../../src/nnc/types.ts';
import { RBAC, strictServer, type StrictServer } from './access-helpers.ts';
import { applySidecarManifests, sidecarToken } from './manifest-helpers.ts';

const NS = 'kube-system';
const EVENTS = `/api/v1/namespaces/${NS}/events`;
const POLICY = 'pool-monitor-sidecar-own-events';
const MERGE = 'application/merge-patch+json';

/** The NNC of `node`, as the sidecar names it in its Events. */
const nncOf = (node: string) => ({
  apiVersion: `${GROUP}/${NNC_VERSION}`,
  kind: NNC_KIND,
  name: node,
  namespace: NS,
});

/** An Event as the sidecar of `node` writes it (createEventRecorder's body), with changes. */
const sidecarEvent = (node: string, name: string, change: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name, namespace: NS },
  involvedObject: nncOf(node),
  type: 'Normal',
  reason: 'PoolScaled',
  message: 'm',
  count: 1,
  source: { component: SIDECAR_EVENT_COMPONENT, host: node },
  reportingComponent: SIDECAR_EVENT_COMPONENT,
  reportingInstance: node,
  ...change,
});

const nameFor = (node: string) =>
  eventName(node, new Date(), Math.random, sidecarEventPrefix(node));

describe("events: the recorder's names have one owner", () => {
  it('createEventRecorder({namePrefix}) creates PREFIX + object (dots made dashes) + "-" + suffix', async () => {
    const names: string[] = [];
    const api: EventsApi = {
      createNamespacedEvent: ({ body }) => (
        names.push(body.metadata?.name ?? ''),
        Promise.resolve(body)
      ),
      replaceNamespacedEvent: ({ body }) => Promise.resolve(body),
    };
    for (const node of ['node-a', 'n1.x']) {
      const r = createEventRecorder({
        api,
        component: SIDECAR_EVENT_COMPONENT,
        host: node,
        namePrefix: sidecarEventPrefix(node),
        logger: silentLogger(),
      });
      await r.recordEvent(nncOf(node), { type: 'Normal', reason: 'PoolScaled', message: 'm' });
    }
    expect(names).to.have.length(2);
    expect(names[0]).to.match(/^pool-monitor-sidecar\.node-a\.node-a-[0-9a-f]+$/);
    expect(names[1]).to.match(/^pool-monitor-sidecar\.n1\.x\.n1-x-[0-9a-f]+$/);
    expect(sidecarOwnsEventName('node-a', names[0]!)).to.equal(true);
    expect(sidecarOwnsEventName('n1.x', names[1]!)).to.equal(true);
    expect(sidecarOwnsEventName('n1', names[1]!)).to.equal(false);
  });

  it("no name of one node is another's, dots or not", () => {
    const nodes = ['n1', 'n1.x', 'n1.x.y', 'n1-x', 'x', 'a.b-c.d'];
    for (const node of nodes) {
      const names = [
        nameFor(node),
        eventName('', new Date(), Math.random, sidecarEventPrefix(node)),
      ];
      for (const name of names)
        for (const other of nodes)
          expect(sidecarOwnsEventName(other, name), `${other} owns ${name}`).to.equal(
            other === node,
          );
    }
  });

  it('a name stays a DNS subdomain of at most 253 characters', () => {
    for (const [object, node] of [
      ['n'.repeat(250), 'node-a'],
      ['a.b.'.repeat(60), 'a.b'],
      // The longest node name with room for the suffix: its object part cut to nothing.
      ['n'.repeat(250), 'n'.repeat(218)],
    ] as const) {
      const name = eventName(object, new Date(), () => 0.5, sidecarEventPrefix(node));
      expect(name.length).to.be.at.most(253);
      expect(name).to.match(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
      expect(sidecarOwnsEventName(node, name), name).to.equal(true);
    }
    expect(eventName('node-a', new Date(0), () => 0)).to.equal('node-a.0'); // kubelet style
  });
});

describe("events: the shipped policy keeps each sidecar to its node's own Events (HTTP)", function () {
  this.timeout(20_000);
  let s: StrictServer;
  /** Tokens of the sidecar's service account: bound to its pod on n1, on n1.x, and to Node n1. */
  const token: Record<'n1' | 'n1.x' | 'n1 (node-bound)', string> = {
    n1: '',
    'n1.x': '',
    'n1 (node-bound)': '',
  };
  before(async () => {
    s = await strictServer({}, { authorizationMode: 'RBAC' });
    await applySidecarManifests(s, ['serviceaccount.yaml', 'rbac.yaml', 'event-names-policy.yaml']);
    for (const node of ['n1', 'n1.x', 'node-b']) {
      const n = await s.admin('POST', '/api/v1/nodes', { metadata: { name: node } });
      expect(n.status, JSON.stringify(n.body)).to.equal(201);
    }
    for (const [pod, node] of [
      ['sidecar-n1', 'n1'],
      ['sidecar-n1-x', 'n1.x'],
    ] as const) {
      const p = await s.admin('POST', `/api/v1/namespaces/${NS}/pods`, {
        metadata: { name: pod },
        spec: { serviceAccountName: 'pool-monitor', nodeName: node, containers: [] },
      });
      expect(p.status, JSON.stringify(p.body)).to.equal(201);
      token[node] = await sidecarToken(s, { apiVersion: 'v1', kind: 'Pod', name: pod });
    }
    token['n1 (node-bound)'] = await sidecarToken(s, {
      apiVersion: 'v1',
      kind: 'Node',
      name: 'n1',
    });
  });
  after(() => s.close());

  const denied = (name: string, node: string, why: 'name' | 'about' | 'reporter') =>
    `events "${name}" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: ` +
    {
      name: `the sidecar of node ${node} may write only Events named pool-monitor-sidecar.${node}.* with no dot after the prefix, not ${name}`,
      about: `the sidecar of node ${node} may write only Events about its own NodeNetworkConfig (acn.azure.com, kube-system/${node}), with no related object, as written and as stored`,
      reporter: `the sidecar of node ${node} may write only Events reported by azure-cns on ${node} (reportingComponent, reportingInstance, source), as written and as stored`,
    }[why];

  const kcWith = (bearer: string): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      // Plain HTTP: client-node wants skipTLSVerify said for it (no TLS to verify).
      clusters: [{ name: 'local', server: s.server.url, skipTLSVerify: true }],
      users: [{ name: 'sidecar', token: bearer }],
      contexts: [{ name: 'sidecar', cluster: 'local', user: 'sidecar' }],
      currentContext: 'sidecar',
    });
    return kc;
  };

  for (const who of ['n1', 'n1.x', 'n1 (node-bound)'] as const) {
    const node = who.split(' ')[0]!;
    it(`the sidecar's recorder creates and updates its node's Events (node ${who})`, async () => {
      const capture = new CaptureTransport();
      const rec = createEventRecorder({
        kc: kcWith(token[who]),
        component: SIDECAR_EVENT_COMPONENT,
        host: node,
        namePrefix: sidecarEventPrefix(node),
        logger: createLogger({ transports: [capture] }),
      });
      const details = { type: 'Warning', reason: 'SubnetExhausted', message: who } as const;
      await rec.recordEvent(nncOf(node), details); // a create
      await rec.recordEvent(nncOf(node), details); // a PUT of count 2
      expect(capture.find('event not recorded')).to.deep.equal([]);
      const items = (await s.admin('GET', EVENTS)).body.items as CoreV1Event[];
      const mine = items.filter((e) => e.message === who);
      expect(mine).to.have.length(1);
      expect(mine[0]!.count).to.equal(2);
      expect(sidecarOwnsEventName(node, mine[0]!.metadata?.name ?? '')).to.equal(true);
    });
  }

  for (const who of ['n1', 'n1 (node-bound)'] as const) {
    it(`node n1's sidecar may not create or overwrite node n1.x's Events (${who} token)`, async () => {
      // A name n1.x's recorder makes, and one forged for n1's prefix check alone.
      for (const name of [nameFor('n1.x'), `${sidecarEventPrefix('n1')}x.forged-${who.length}`]) {
        const c = await s.as(token[who], 'POST', EVENTS, sidecarEvent('n1', name));
        expect(c.status).to.equal(403);
        expect(c.body.message).to.equal(denied(name, 'n1', 'name'));
      }
      // n1.x's own Event, written by n1.x's sidecar, stays n1.x's.
      const name = nameFor('n1.x');
      const made = await s.as(token['n1.x'], 'POST', EVENTS, sidecarEvent('n1.x', name));
      expect(made.status, JSON.stringify(made.body)).to.equal(201);
      for (const body of [
        { ...made.body, message: 'forged' },
        { ...made.body, ...sidecarEvent('n1', name), metadata: made.body.metadata },
      ]) {
        const u = await s.as(token[who], 'PUT', `${EVENTS}/${name}`, body);
        expect(u.status).to.equal(403);
        expect(u.body.message).to.equal(denied(name, 'n1', 'name'));
      }
      expect((await s.admin('GET', `${EVENTS}/${name}`)).body.message).to.equal('m');
    });
  }

  it("node n1.x's sidecar may not write n1's Events either", async () => {
    const name = nameFor('n1');
    const c = await s.as(token['n1.x'], 'POST', EVENTS, sidecarEvent('n1.x', name));
    expect(c.status).to.equal(403);
    expect(c.body.message).to.equal(denied(name, 'n1.x', 'name'));
  });

  for (const [whose, name] of [
    ["node B's sidecar", nameFor('node-b')],
    ['the fulfiller', eventName('n1', new Date(), Math.random, FULFILLER_EVENT_PREFIX)],
    ['nobody in particular (kubelet-style)', eventName('n1', new Date())],
  ] as const)
    it(`node n1's sidecar may not create or overwrite an Event named as ${whose}'s`, async () => {
      const c = await s.as(token.n1, 'POST', EVENTS, sidecarEvent('n1', name));
      expect(c.status).to.equal(403);
      expect(c.body.message).to.equal(denied(name, 'n1', 'name'));
      const made = await s.admin('POST', EVENTS, sidecarEvent('node-b', name));
      expect(made.status).to.equal(201);
      const u = await s.as(token.n1, 'PUT', `${EVENTS}/${name}`, {
        ...made.body,
        message: 'forged',
      });
      expect(u.status).to.equal(403);
      expect((await s.admin('GET', `${EVENTS}/${name}`)).body.message).to.equal('m');
    });

  /**
   * An Event with eventTime (and so action) set: core/v1 validation then lets
   * its involvedObject be in another namespace than the Event, or in none.
   */
  const NEW_STYLE = { eventTime: '2025-01-01T00:00:00.000000Z', action: 'Scale' };

  /** Changes that make an Event under n1's own name not n1's own, and the rule that refuses each. */
  const forgeries: [string, Record<string, unknown>, 'about' | 'reporter'][] = [
    [
      "about node-b's NNC, as the fulfiller, SubnetExhausted (the reported forgery)",
      {
        involvedObject: nncOf('node-b'),
        type: 'Warning',
        reason: 'SubnetExhausted',
        source: { component: 'pool-monitor-fulfiller' },
        reportingComponent: 'pool-monitor-fulfiller',
        reportingInstance: '',
      },
      'about',
    ],
    [
      "about node-b's NNC, otherwise as the sidecar sends it",
      { involvedObject: nncOf('node-b') },
      'about',
    ],
    [
      "about node-b's Node (kubectl describe node searches every namespace)",
      { ...NEW_STYLE, involvedObject: { apiVersion: 'v1', kind: 'Node', name: 'node-b' } },
      'about',
    ],
    [
      'about an n1 of another group',
      { involvedObject: { ...nncOf('n1'), apiVersion: 'evil.example.com/v1alpha' } },
      'about',
    ],
    [
      'about an NNC n1 in another namespace',
      { ...NEW_STYLE, involvedObject: { ...nncOf('n1'), namespace: 'default' } },
      'about',
    ],
    ['about no object', { ...NEW_STYLE, involvedObject: {} }, 'about'],
    ["naming node-b's NNC as related", { related: nncOf('node-b') }, 'about'],
    [
      'with source.component the fulfiller',
      { source: { component: 'ipam-fulfiller', host: 'n1' } },
      'reporter',
    ],
    [
      'with source.component pool-monitor-fulfiller',
      { source: { component: 'pool-monitor-fulfiller' } },
      'reporter',
    ],
    ['with source.host node-b', { source: { component: 'azure-cns', host: 'node-b' } }, 'reporter'],
    ['with reportingComponent the fulfiller', { reportingComponent: 'ipam-fulfiller' }, 'reporter'],
    ['with reportingInstance node-b', { reportingInstance: 'node-b' }, 'reporter'],
    ['without reportingComponent', { reportingComponent: undefined }, 'reporter'],
  ];

  for (const who of ['n1', 'n1 (node-bound)'] as const)
    for (const [what, change, why] of forgeries)
      it(`node n1's sidecar may not create an Event under its own name ${what} (${who} token)`, async () => {
        const name = nameFor('n1');
        const c = await s.as(token[who], 'POST', EVENTS, sidecarEvent('n1', name, change));
        expect(c.status).to.equal(403);
        expect(c.body.message).to.equal(denied(name, 'n1', why));
        expect((await s.admin('GET', `${EVENTS}/${name}`)).status).to.equal(404);
      });

  it("node n1's sidecar may not turn its own Event into one about another node (PUT)", async () => {
    const name = nameFor('n1');
    const c = await s.as(token.n1, 'POST', EVENTS, sidecarEvent('n1', name));
    expect(c.status, JSON.stringify(c.body)).to.equal(201);
    for (const [, change, why] of forgeries) {
      const u = await s.as(token.n1, 'PUT', `${EVENTS}/${name}`, {
        ...c.body,
        ...change,
        metadata: c.body.metadata,
      });
      expect(u.status).to.equal(403);
      expect(u.body.message).to.equal(denied(name, 'n1', why));
    }
    const u = await s.as(token.n1, 'PUT', `${EVENTS}/${name}`, { ...c.body, count: 2 });
    expect(u.status, JSON.stringify(u.body)).to.equal(200);
  });

  it("node n1's sidecar may not rewrite an Event under its name that is not its own (oldObject)", async () => {
    for (const [, change, why] of forgeries) {
      const name = nameFor('n1');
      const made = await s.admin('POST', EVENTS, sidecarEvent('n1', name, change));
      expect(made.status, JSON.stringify(made.body)).to.equal(201);
      // Made the sidecar's own in every field: refused all the same, as stored it is not.
      const u = await s.as(token.n1, 'PUT', `${EVENTS}/${name}`, {
        ...sidecarEvent('n1', name),
        metadata: made.body.metadata,
      });
      expect(u.status).to.equal(403);
      expect(u.body.message).to.equal(denied(name, 'n1', why));
      expect((await s.admin('GET', `${EVENTS}/${name}`)).body).to.deep.include(
        Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined)),
      );
    }
  });

  it('with patch granted too (RBAC does not), a PATCH is held to the same rules', async () => {
    const role = await s.admin('POST', `${RBAC}/namespaces/${NS}/roles`, {
      metadata: { name: 'test-events-patch' },
      rules: [{ apiGroups: [''], resources: ['events'], verbs: ['patch'] }],
    });
    expect(role.status).to.equal(201);
    const binding = await s.admin('POST', `${RBAC}/namespaces/${NS}/rolebindings`, {
      metadata: { name: 'test-events-patch' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'test-events-patch' },
      subjects: [{ kind: 'ServiceAccount', name: 'pool-monitor', namespace: NS }],
    });
    expect(binding.status).to.equal(201);

    const own = nameFor('n1');
    expect((await s.as(token.n1, 'POST', EVENTS, sidecarEvent('n1', own))).status).to.equal(201);
    const p = await s.as(token.n1, 'PATCH', `${EVENTS}/${own}`, { count: 3 }, MERGE);
    expect(p.status, JSON.stringify(p.body)).to.equal(200);
    const moved = await s.as(
      token.n1,
      'PATCH',
      `${EVENTS}/${own}`,
      { involvedObject: { name: 'node-b' } },
      MERGE,
    );
    expect(moved.status).to.equal(403);
    expect(moved.body.message).to.equal(denied(own, 'n1', 'about'));

    const notOwn = nameFor('n1');
    const made = await s.admin('POST', EVENTS, sidecarEvent('n1', notOwn, forgeries[1]![1]));
    expect(made.status).to.equal(201);
    const fixed = await s.as(
      token.n1,
      'PATCH',
      `${EVENTS}/${notOwn}`,
      { involvedObject: { name: 'n1' } },
      MERGE,
    );
    expect(fixed.status).to.equal(403);
    expect(fixed.body.message).to.equal(denied(notOwn, 'n1', 'about'));
    const theirs = nameFor('n1.x');
    const c = await s.as(token['n1.x'], 'POST', EVENTS, sidecarEvent('n1.x', theirs));
    expect(c.status, JSON.stringify(c.body)).to.equal(201);
    const other = await s.as(
      token.n1,
      'PATCH',
      `${EVENTS}/${theirs}`,
      { message: 'forged' },
      MERGE,
    );
    expect(other.status).to.equal(403);
    expect(other.body.message).to.equal(denied(theirs, 'n1', 'name'));
    expect((await s.admin('GET', `${EVENTS}/${theirs}`)).body.message).to.equal('m');
  });
});
