// The default RBAC objects every Kubernetes cluster starts with, for the part
// this server serves: cluster-admin (bound to system:masters),
// system:discovery (discovery and OpenAPI for every authenticated user),
// system:basic-user (SelfSubjectReview, `kubectl auth whoami`),
// system:public-info-viewer (health and version for everyone) and
// system:monitoring (/metrics).
import type { KObject } from '../../../src/kube/json-object.ts';

const RBAC = 'rbac.authorization.k8s.io/v1';
const labels = { 'kubernetes.io/bootstrapping': 'rbac-defaults' };

const role = (name: string, rules: object[]): KObject => ({
  apiVersion: RBAC,
  kind: 'ClusterRole',
  metadata: {
    name,
    labels,
    annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
  },
  rules: rules as KObject[],
});

const binding = (name: string, groups: string[]): KObject => ({
  apiVersion: RBAC,
  kind: 'ClusterRoleBinding',
  metadata: {
    name,
    labels,
    annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
  },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
  subjects: groups.map((g) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: g })),
});

const HEALTH = ['/healthz', '/livez', '/readyz', '/version', '/version/'];

export function bootstrapClusterRoles(): KObject[] {
  return [
    role('cluster-admin', [
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      { nonResourceURLs: ['*'], verbs: ['*'] },
    ]),
    role('system:discovery', [
      {
        nonResourceURLs: [
          '/api',
          '/api/*',
          '/apis',
          '/apis/*',
          '/openapi',
          '/openapi/*',
          ...HEALTH,
        ],
        verbs: ['get'],
      },
    ]),
    role('system:public-info-viewer', [{ nonResourceURLs: HEALTH, verbs: ['get'] }]),
    role('system:basic-user', [
      {
        apiGroups: ['authentication.k8s.io'],
        resources: ['selfsubjectreviews'],
        verbs: ['create'],
      },
    ]),
    role('system:monitoring', [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]),
  ];
}

export function bootstrapClusterRoleBindings(): KObject[] {
  return [
    binding('cluster-admin', ['system:masters']),
    binding('system:discovery', ['system:authenticated']),
    binding('system:public-info-viewer', ['system:authenticated', 'system:unauthenticated']),
    binding('system:basic-user', ['system:authenticated']),
    binding('system:monitoring', ['system:monitoring']),
  ];
}
