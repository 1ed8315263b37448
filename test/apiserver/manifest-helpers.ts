// The shipped sidecar manifests applied to a strict API server, and tokens
// for the sidecar's service account, for the admission tests.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { RBAC, type StrictServer } from './access-helpers.ts';

const ADM = '/apis/admissionregistration.k8s.io/v1';

export const sidecarManifest = (file: string): Record<string, unknown>[] =>
  parseAllDocuments(
    readFileSync(new URL(`../../manifests/sidecar/${file}`, import.meta.url), 'utf8'),
  ).map((d) => d.toJS() as Record<string, unknown>);

const COLLECTIONS: Record<string, string> = {
  ServiceAccount: '/api/v1/namespaces/kube-system/serviceaccounts',
  ClusterRole: `${RBAC}/clusterroles`,
  ClusterRoleBinding: `${RBAC}/clusterrolebindings`,
  Role: `${RBAC}/namespaces/kube-system/roles`,
  RoleBinding: `${RBAC}/namespaces/kube-system/rolebindings`,
  ValidatingAdmissionPolicy: `${ADM}/validatingadmissionpolicies`,
  ValidatingAdmissionPolicyBinding: `${ADM}/validatingadmissionpolicybindings`,
};

export async function applySidecarManifests(s: StrictServer, files: string[]): Promise<void> {
  for (const f of files)
    for (const doc of sidecarManifest(f)) {
      const r = await s.admin('POST', COLLECTIONS[doc.kind as string] as string, doc);
      expect(r.status, JSON.stringify(r.body)).to.equal(201);
    }
}

/** A token for service account kube-system/pool-monitor bound to `ref`. */
export async function sidecarToken(s: StrictServer, ref?: object): Promise<string> {
  const r = await s.admin(
    'POST',
    '/api/v1/namespaces/kube-system/serviceaccounts/pool-monitor/token',
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: ref ? { boundObjectRef: ref } : {},
    },
  );
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
  return r.body.status.token as string;
}
