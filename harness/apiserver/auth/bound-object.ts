// The object a TokenRequest binds its token to, resolved as kube-apiserver
// 1.30–1.33 does it (pkg/registry/core/serviceaccount/storage/token.go,
// TokenREST.Create): a Pod must run as the token's service account and
// brings its node's name and uid (ServiceAccountTokenPodNodeInfo, beta and
// on from 1.30; a missing Node gives the name alone); a Node needs the
// ServiceAccountTokenNodeBinding gate; any other kind or group is refused
// with its GroupVersionKind; a uid in the reference must be the object's.
// Secrets are not served here, so a Secret reference is refused as unknown.
import { badRequest, conflict, notFound, type ApiError } from '../errors.ts';
import { isObject, type KObject } from '../../../src/kube/json-object.ts';
import type { FeatureGates } from './feature-gates.ts';
import type { TokenBinding } from './service-account-tokens.ts';

export type ObjectGetter = (
  kind: 'ServiceAccount' | 'Pod' | 'Node',
  namespace: string | undefined,
  name: string,
) => KObject | undefined;

const uidOf = (o: KObject): string => String(o.metadata.uid ?? '');

/** schema.GroupVersionKind.String() of an apiVersion and kind: "/v1, Kind=Pod". */
export function gvkString(apiVersion: string, kind: string): string {
  const slash = apiVersion.indexOf('/');
  const [group, version] =
    slash < 0 ? ['', apiVersion] : [apiVersion.slice(0, slash), apiVersion.slice(slash + 1)];
  return `${group}/${version}, Kind=${kind}`;
}

/** The group of an apiVersion ("" for "v1"). */
const groupOf = (apiVersion: string): string =>
  apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';

/**
 * The binding of `ref` (spec.boundObjectRef) for a token of service account
 * `saName` in `namespace`; throws the ApiError kube-apiserver answers.
 */
export function resolveBinding(
  ref: Record<string, unknown>,
  saName: string,
  namespace: string,
  get: ObjectGetter,
  gates: FeatureGates,
): TokenBinding {
  const apiVersion = typeof ref.apiVersion === 'string' ? ref.apiVersion : '';
  const kind = typeof ref.kind === 'string' ? ref.kind : '';
  const name = typeof ref.name === 'string' ? ref.name : '';
  const wantUid = typeof ref.uid === 'string' ? ref.uid : '';
  const group = groupOf(apiVersion);
  const mismatch = (uid: string): ApiError | undefined =>
    wantUid !== '' && wantUid !== uid
      ? conflict(
          group,
          kind,
          name,
          `the UID in the bound object reference (${wantUid}) does not match the UID in record. The object might have been deleted and then recreated`,
        )
      : undefined;
  if (group === '' && kind === 'Pod') {
    const pod = get('Pod', namespace, name);
    if (!pod) throw notFound('', 'pods', name);
    const spec = isObject(pod.spec) ? pod.spec : {};
    // The ServiceAccount admission plugin sets an empty serviceAccountName to
    // "default" on create (plugin/pkg/admission/serviceaccount/admission.go).
    const runsAs =
      typeof spec.serviceAccountName === 'string' && spec.serviceAccountName !== ''
        ? spec.serviceAccountName
        : 'default';
    if (runsAs !== saName)
      throw badRequest(
        `cannot bind token for serviceaccount "${saName}" to pod running with different serviceaccount name.`,
      );
    const err = mismatch(uidOf(pod));
    if (err) throw err;
    const binding: TokenBinding = { pod: { name, uid: uidOf(pod) } };
    const nodeName = typeof spec.nodeName === 'string' ? spec.nodeName : '';
    if (nodeName !== '') {
      const node = get('Node', undefined, nodeName);
      binding.node = { name: nodeName, uid: node ? uidOf(node) : '' };
    }
    return binding;
  }
  if (group === '' && kind === 'Node') {
    if (!gates.ServiceAccountTokenNodeBinding)
      throw badRequest(
        'cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" feature-gate is disabled',
      );
    const node = get('Node', undefined, name);
    if (!node) throw notFound('', 'nodes', name);
    const err = mismatch(uidOf(node));
    if (err) throw err;
    return { node: { name, uid: uidOf(node) } };
  }
  throw badRequest(`cannot bind token to object of type ${gvkString(apiVersion, kind)}`);
}
