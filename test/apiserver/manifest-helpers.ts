// The shipped sidecar and fulfiller manifests applied to a strict API
// server, and tokens for their service accounts, for the admission tests.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { RBAC, type StrictServer } from './access-helpers.ts';

const ADM = '/apis/admissionregistration.k8s.io/v1';

type Component = 'sidecar' | 'fulfiller';

/** The objects of manifests/<component>/<file>. */
export const componentManifest = (component: Component, file: string): Record<string, unknown>[] =>
  parseAllDocuments(
    readFileSync(new URL(`../../manifests/${component}/${file}`, import.meta.url), 'utf8'),
  ).map((d) => d.toJS() as Record<string, unknown>);

export const sidecarManifest = (file: string): Record<string, unknown>[] =>
  componentManifest('sidecar', file);

const COLLECTIONS: Record<string, string> = {
  ServiceAccount: '/api/v1/namespaces/kube-system/serviceaccounts',
  ClusterRole: `${RBAC}/clusterroles`,
  ClusterRoleBinding: `${RBAC}/clusterrolebindings`,
  Role: `${RBAC}/namespaces/kube-system/roles`,
  RoleBinding: `${RBAC}/namespaces/kube-system/rolebindings`,
  ValidatingAdmissionPolicy: `${ADM}/validatingadmissionpolicies`,
  ValidatingAdmissionPolicyBinding: `${ADM}/validatingadmissionpolicybindings`,
};

/** Creates, as the admin, every object of these files of manifests/<component>/. */
export async function applyManifests(
  s: StrictServer,
  component: Component,
  files: string[],
): Promise<void> {
  for (const f of files)
    for (const doc of componentManifest(component, f)) {
      const r = await s.admin('POST', COLLECTIONS[doc.kind as string] as string, doc);
      expect(r.status, JSON.stringify(r.body)).to.equal(201);
    }
}

export const applySidecarManifests = (s: StrictServer, files: string[]): Promise<void> =>
  applyManifests(s, 'sidecar', files);

/** A token for service account kube-system/pool-monitor bound to `ref`. */
export const sidecarToken = (s: StrictServer, ref?: object): Promise<string> =>
  serviceAccountToken(s, 'pool-monitor', ref);

/** A token for service account kube-system/`name` (bound to `ref` when given). */
export async function serviceAccountToken(
  s: StrictServer,
  name: string,
  ref?: object,
): Promise<string> {
  const r = await s.admin('POST', `/api/v1/namespaces/kube-system/serviceaccounts/${name}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: ref ? { boundObjectRef: ref } : {},
  });
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
  return r.body.status.token as string;
}
