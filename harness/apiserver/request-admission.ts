// A write request's validating admission (admission/policy.ts), built from
// the request once and called around each of the write's commits; its
// warnings go out as Warning headers as kube-apiserver sends them.
import type { ServerResponse } from 'node:http';
import type { AccessControl } from './access.ts';
import type { AdmissionAttributes, Operation } from './admission/policy.ts';
import type { UserInfo } from './auth/user.ts';
import type { Admission } from './registry.ts';
import type { ResourceInfo } from './resources.ts';
import type { ObjectStore } from './store.ts';

/** What of the request its admission reads. */
export interface AdmittedRequest {
  res: ServerResponse;
  resource: ResourceInfo;
  version: string;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  query: URLSearchParams;
  user: UserInfo;
}

/** Validating admission around the write's commits; warnings go out as headers. */
export function requestAdmission(
  rq: AdmittedRequest,
  store: ObjectStore,
  access: AccessControl,
): Admission {
  const { resource: r, namespace: ns, name, res } = rq;
  const namespaceObject =
    r.namespaced && ns ? (store.get('namespaces', undefined, ns) ?? null) : null;
  const base = {
    group: r.group,
    version: rq.version,
    resource: r.plural,
    subresource: rq.subresource ?? '',
    kind: r.kind,
    namespace: ns ?? '',
    user: rq.user,
    dryRun: rq.query.getAll('dryRun').includes('All'),
    namespaceObject,
  };
  return (object, oldObject) => {
    const operation: Operation =
      object === null ? 'DELETE' : oldObject === null ? 'CREATE' : 'UPDATE';
    const a: AdmissionAttributes = {
      ...base,
      operation,
      name: name ?? String((object ?? oldObject)?.metadata.name ?? ''),
      object,
      oldObject,
    };
    for (const w of access.admit(a)) res.appendHeader('Warning', `299 - ${JSON.stringify(w)}`);
  };
}
