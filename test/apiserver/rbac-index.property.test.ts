// Property: the indexed RBAC authorizer (bindings by subject, rules cached
// per user) decides every request exactly as the plain scan of every
// binding does, denial reason included; and after a change and
// invalidate() it follows the new objects.
import { expect } from 'chai';
import fc from 'fast-check';
import type { KObject } from '../../src/kube/json-object.ts';
import { RbacIndex } from '../../harness/apiserver/auth/rbac-index.ts';
import {
  rbacAuthorize,
  type RbacSource,
  type RequestAttributes,
} from '../../harness/apiserver/auth/rbac.ts';
import type { UserInfo } from '../../harness/apiserver/auth/user.ts';
import { GROUP, NNC_PLURAL } from '../../src/nnc/types.ts';

const NAMESPACES = ['ns1', 'ns2'];
const ROLE_NAMES = ['r1', 'r2', 'r3', 'missing'];

const ruleArb = fc.oneof(
  fc.record({
    verbs: fc.subarray(['get', 'list', 'patch', '*'], { minLength: 1 }),
    apiGroups: fc.subarray(['', GROUP, '*'], { minLength: 1 }),
    resources: fc.subarray(['pods', NNC_PLURAL, `${NNC_PLURAL}/status`, '*'], {
      minLength: 1,
    }),
    resourceNames: fc.option(fc.subarray(['a', 'b'], { minLength: 1 }), { nil: undefined }),
  }),
  fc.record({
    verbs: fc.subarray(['get', '*'], { minLength: 1 }),
    nonResourceURLs: fc.subarray(['/metrics', '/heal*', '*'], { minLength: 1 }),
  }),
);

const subjectArb = fc.oneof(
  fc.record({ kind: fc.constant('User'), name: fc.constantFrom('alice', 'bob') }),
  fc.record({ kind: fc.constant('Group'), name: fc.constantFrom('g1', 'g2') }),
  fc.record({
    kind: fc.constant('ServiceAccount'),
    name: fc.constantFrom('sa', 'other'),
    namespace: fc.option(fc.constantFrom(...NAMESPACES), { nil: undefined }),
  }),
);

const bindingArb = fc.record({
  name: fc.constantFrom('b1', 'b2', 'b3', 'b4'),
  roleKind: fc.constantFrom('Role', 'ClusterRole'),
  roleName: fc.constantFrom(...ROLE_NAMES),
  subjects: fc.array(subjectArb, { maxLength: 3 }),
});

const worldArb = fc.record({
  clusterRoles: fc.dictionary(
    fc.constantFrom('r1', 'r2', 'r3'),
    fc.array(ruleArb, { maxLength: 3 }),
  ),
  roles: fc.array(
    fc.record({
      namespace: fc.constantFrom(...NAMESPACES),
      name: fc.constantFrom('r1', 'r2', 'r3'),
      rules: fc.array(ruleArb, { maxLength: 3 }),
    }),
    { maxLength: 4 },
  ),
  clusterBindings: fc.array(bindingArb, { maxLength: 4 }),
  roleBindings: fc.array(
    fc.record({ namespace: fc.constantFrom(...NAMESPACES), binding: bindingArb }),
    { maxLength: 4 },
  ),
});
type World = typeof worldArb extends fc.Arbitrary<infer W> ? W : never;

const users: UserInfo[] = [
  { username: 'alice', uid: '', groups: ['g1', 'system:authenticated'], extra: {} },
  { username: 'bob', uid: '', groups: ['system:authenticated'], extra: {} },
  {
    username: 'system:serviceaccount:ns1:sa',
    uid: '',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:ns1', 'system:authenticated'],
    extra: {},
  },
  { username: 'carol', uid: '', groups: ['g2', 'g1'], extra: {} },
];

const requestArb = fc.record({
  user: fc.constantFrom(...users),
  verb: fc.constantFrom('get', 'list', 'patch', 'delete'),
  resourceRequest: fc.boolean(),
  path: fc.constantFrom('/metrics', '/healthz', '/version'),
  apiGroup: fc.constantFrom('', GROUP),
  resource: fc.constantFrom('pods', NNC_PLURAL),
  subresource: fc.constantFrom('', 'status'),
  namespace: fc.constantFrom('', ...NAMESPACES),
  name: fc.constantFrom('', 'a', 'b'),
}) as fc.Arbitrary<RequestAttributes>;

/** The world as a mutable RbacSource, objects as the store holds them (sorted by key). */
function sourceOf(w: World): RbacSource {
  // As the store holds them: JSON, no undefined fields.
  const k = (o: object): KObject => JSON.parse(JSON.stringify(o)) as KObject;
  const binding = (b: World['clusterBindings'][number], namespace?: string): KObject =>
    k({
      metadata: { name: b.name, ...(namespace ? { namespace } : {}) },
      roleRef: { kind: b.roleKind, name: b.roleName },
      subjects: b.subjects,
    });
  const dedupe = (list: KObject[]): KObject[] => {
    const m = new Map<string, KObject>();
    for (const o of list) m.set(`${o.metadata.namespace ?? ''}/${o.metadata.name}`, o);
    return [...m.entries()].sort((x, y) => (x[0] < y[0] ? -1 : 1)).map((e) => e[1]);
  };
  return {
    clusterRole: (name) =>
      name in w.clusterRoles ? k({ metadata: { name }, rules: w.clusterRoles[name] }) : undefined,
    role: (ns, name) => {
      const r = [...w.roles].reverse().find((x) => x.namespace === ns && x.name === name);
      return r ? k({ metadata: { name, namespace: ns }, rules: r.rules }) : undefined;
    },
    clusterRoleBindings: () => dedupe(w.clusterBindings.map((b) => binding(b))),
    roleBindings: (ns) =>
      dedupe(w.roleBindings.filter((x) => x.namespace === ns).map((x) => binding(x.binding, ns))),
  };
}

describe('cluster: RBAC index', () => {
  it('decides every request as the scan of every binding does', () => {
    fc.assert(
      fc.property(worldArb, fc.array(requestArb, { minLength: 1, maxLength: 20 }), (w, reqs) => {
        const src = sourceOf(w);
        const index = new RbacIndex(src);
        for (const a of reqs) expect(index.decide(a)).to.deep.equal(rbacAuthorize(a, src));
      }),
      { numRuns: 300 },
    );
  });

  it('follows a changed world after invalidate()', () => {
    fc.assert(
      fc.property(
        worldArb,
        worldArb,
        fc.array(requestArb, { minLength: 1, maxLength: 10 }),
        (w1, w2, reqs) => {
          const world = { current: w1 };
          const src: RbacSource = {
            clusterRole: (n) => sourceOf(world.current).clusterRole(n),
            role: (ns, n) => sourceOf(world.current).role(ns, n),
            clusterRoleBindings: () => sourceOf(world.current).clusterRoleBindings(),
            roleBindings: (ns) => sourceOf(world.current).roleBindings(ns),
          };
          const index = new RbacIndex(src);
          for (const a of reqs) index.decide(a);
          world.current = w2;
          index.invalidate();
          for (const a of reqs) expect(index.decide(a)).to.deep.equal(rbacAuthorize(a, src));
        },
      ),
      { numRuns: 100 },
    );
  });
});
