// The CEL subset admission policies use, evaluated by @bufbuild/cel over
// Kubernetes JSON as Kubernetes types it; and the admission rule matcher.
import { expect } from 'chai';
import { evaluate, toCel } from '../../harness/apiserver/admission/cel.ts';
import {
  evaluatePolicy,
  lazyBindings,
  ruleMatches,
  type AdmissionAttributes,
} from '../../harness/apiserver/admission/policy.ts';
import type { KObject } from '../../src/kube/json-object.ts';
import { GROUP, NNC_KIND, NNC_PLURAL, NNC_VERSION } from '../../src/nnc/types.ts';

const object = {
  metadata: { name: 'node-a', labels: { tier: 'x' } },
  spec: { requestedIPCount: 16, ipsNotInUse: ['id-1', 'id-2'] },
};
const request = {
  name: 'node-a',
  operation: 'UPDATE',
  userInfo: {
    username: 'system:serviceaccount:kube-system:pool-monitor',
    groups: ['system:serviceaccounts', 'system:authenticated'],
    extra: { 'authentication.kubernetes.io/node-name': ['node-a'] },
  },
};
const bindings = {
  object: toCel(object),
  oldObject: toCel(null),
  request: toCel(request),
  variables: toCel({ nodeName: 'node-a' }),
};

// [expression, value or { error: pattern }]
// prettier-ignore
const TABLE: [string, unknown][] = [
  ["object.metadata.name == 'node-a'", true],
  ['object.spec.requestedIPCount', 16n],
  ['object.spec.requestedIPCount <= 250', true],
  ['object.spec.requestedIPCount + 1 == 17', true],
  ['object.spec.ipsNotInUse.size()', 2n],
  ["object.spec.ipsNotInUse.all(x, x.startsWith('id-'))", true],
  ["object.spec.ipsNotInUse.exists(x, x == 'id-2')", true],
  ["'id-3' in object.spec.ipsNotInUse", false],
  ['has(object.spec.ipsNotInUse)', true],
  ['has(object.status)', false],
  ['object.status', { error: /status/ }],
  ['oldObject == null', true],
  ["has(request.userInfo.extra) && 'authentication.kubernetes.io/node-name' in request.userInfo.extra", true],
  ["request.userInfo.extra['authentication.kubernetes.io/node-name'][0] == object.metadata.name", true],
  ["request.userInfo.groups.exists(g, g == 'system:serviceaccounts')", true],
  ["request.operation == 'UPDATE' ? 'u' : 'other'", 'u'],
  ["(has(object.metadata.annotations) ? object.metadata.annotations : {}) == {}", true],
  ["object.metadata.labels == {'tier': 'x'}", true],
  ["'node ' + variables.nodeName", 'node node-a'],
  ["request.name.lowerAscii() == 'node-a'", true],
  ["'a,b'.split(',').size() == 2", true],
  ["request.name.matches('^node-[a-z]$')", true],
  ['string(object.spec.requestedIPCount)', '16'],
  ['1 / 0', { error: /divi/ }],
  ['object.spec.requestedIPCount ==', { error: /compilation failed/ }],
];

describe('admission: CEL subset', () => {
  for (const [expr, want] of TABLE)
    it(`${expr} → ${typeof want === 'object' && want !== null ? 'error' : String(want)}`, () => {
      const r = evaluate(expr, bindings);
      if (typeof want === 'object' && want !== null && 'error' in want) {
        expect(r.ok, JSON.stringify(r)).to.equal(false);
        if (!r.ok) expect(r.error).to.match(want.error as RegExp);
      } else {
        expect(
          r,
          JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)),
        ).to.deep.equal({ ok: true, value: want });
      }
    });
});

const attrs = (over: Partial<AdmissionAttributes>): AdmissionAttributes => ({
  operation: 'UPDATE',
  group: GROUP,
  version: NNC_VERSION,
  resource: NNC_PLURAL,
  subresource: '',
  kind: NNC_KIND,
  name: 'node-a',
  namespace: 'kube-system',
  user: { username: 'u', uid: '', groups: [], extra: {} },
  dryRun: false,
  object: null,
  oldObject: null,
  namespaceObject: null,
  ...over,
});

// [resources, operations, scope, request, matches]; the rules as a policy
// document writes them, spelled out.
// prettier-ignore
const RULES: [string[], string[], string | undefined, Partial<AdmissionAttributes>, boolean][] = [
  [['nodenetworkconfigs'], ['UPDATE'], undefined, {}, true],
  [['nodenetworkconfigs'], ['UPDATE'], undefined, { subresource: 'status' }, false],
  [['nodenetworkconfigs/status'], ['UPDATE'], undefined, { subresource: 'status' }, true],
  [['nodenetworkconfigs/*'], ['UPDATE'], undefined, { subresource: 'status' }, true],
  [['nodenetworkconfigs/*'], ['UPDATE'], undefined, {}, true], // sub "*" matches "" too, as upstream's matcher
  [['*'], ['UPDATE'], undefined, {}, true],
  [['*'], ['UPDATE'], undefined, { subresource: 'status' }, false],
  [['*/*'], ['UPDATE'], undefined, { subresource: 'status' }, true],
  [['*/status'], ['*'], undefined, { subresource: 'status', operation: 'DELETE' }, true],
  [['nodenetworkconfigs'], ['CREATE'], undefined, {}, false],
  [['nodenetworkconfigs'], ['*'], 'Cluster', {}, false],
  [['nodenetworkconfigs'], ['*'], 'Namespaced', {}, true],
  [['pods'], ['*'], undefined, {}, false],
];

describe('admission: resource rules', () => {
  for (const [resources, operations, scope, over, want] of RULES)
    it(`${resources.join(',')} ${operations.join(',')}${scope ? ` ${scope}` : ''} vs ${over.operation ?? 'UPDATE'} ${over.subresource ?? ''} → ${want}`, () => {
      const rule = {
        apiGroups: ['acn.azure.com'],
        apiVersions: ['*'],
        resources,
        operations,
        ...(scope ? { scope } : {}),
      };
      expect(ruleMatches(rule, attrs(over))).to.equal(want);
    });
});

describe('admission: bindings made when first read', () => {
  const policy = (matchUser: string) => ({
    metadata: { name: 'p' },
    spec: {
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ['acn.azure.com'],
            apiVersions: ['*'],
            resources: ['nodenetworkconfigs'],
            operations: ['UPDATE'],
          },
        ],
      },
      matchConditions: [{ name: 'who', expression: `request.userInfo.username == '${matchUser}'` }],
      validations: [{ expression: "object.metadata.name == 'node-a'" }],
    },
  });
  const binding = {
    metadata: { name: 'b' },
    spec: { policyName: 'p', validationActions: ['Deny'] },
  };
  /** An object that counts how often its fields are read (converted to CEL). */
  const counted = (): { object: KObject; reads: () => number } => {
    let reads = 0;
    const object = { metadata: { name: 'node-b' } } as KObject;
    Object.defineProperty(object, 'spec', {
      enumerable: true,
      get: () => {
        reads++;
        return {};
      },
    });
    return { object, reads: () => reads };
  };

  it('a policy whose matchConditions leave the request out never converts the objects', () => {
    const { object, reads } = counted();
    expect(
      evaluatePolicy(
        policy('someone-else') as KObject,
        binding as KObject,
        attrs({ object, oldObject: object }),
      ),
    ).to.deep.equal({});
    expect(reads()).to.equal(0);
  });

  it('one that applies converts them once, and decides on them', () => {
    const { object, reads } = counted();
    const out = evaluatePolicy(
      policy('u') as KObject,
      binding as KObject,
      attrs({ object, oldObject: object }),
    );
    expect(out.denial?.message).to.equal("failed expression: object.metadata.name == 'node-a'");
    expect(reads()).to.equal(1);
  });

  it('lazyBindings: made once, on the first read; a set value wins', () => {
    let made = 0;
    const b = lazyBindings({ x: () => (made++, 'v') });
    expect(made).to.equal(0);
    expect([b.x, b.x]).to.deep.equal(['v', 'v']);
    expect(made).to.equal(1);
    b.x = 'w';
    expect(b.x).to.equal('w');
  });
});
