// The TokenRequest API (POST .../serviceaccounts/NAME/token, as `kubectl
// create token` sends it): validates the request as Kubernetes does and
// answers with a signed, bound service-account token.
import { type ApiError, badRequest, invalid, notFound } from '../errors.ts';
import { resolveBinding, type ObjectGetter } from './bound-object.ts';
import { DEFAULT_FEATURE_GATES, type FeatureGates } from './feature-gates.ts';
import { isObject, type Json, type KObject } from '../../../src/kube/json-object.ts';
import {
  DEFAULT_EXPIRATION_SECONDS,
  MIN_EXPIRATION_SECONDS,
  type ServiceAccountTokens,
  type TokenBinding,
} from './service-account-tokens.ts';

const uidOf = (o: KObject): string => String(o.metadata.uid ?? '');

export function tokenRequest(
  tokens: ServiceAccountTokens,
  get: ObjectGetter,
  namespace: string,
  saName: string,
  body: Json,
  gates: FeatureGates = DEFAULT_FEATURE_GATES,
): KObject {
  if (!isObject(body)) throw badRequest('the TokenRequest body must be a JSON object');
  const sa = get('ServiceAccount', namespace, saName);
  if (!sa) throw notFound('', 'serviceaccounts', saName);
  const spec = isObject(body.spec) ? body.spec : {};
  const fail = (field: string, message: string): ApiError =>
    invalid('TokenRequest', 'authentication.k8s.io', saName, [
      { reason: 'FieldValueInvalid', field, message },
    ]);
  const exp = spec.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS;
  if (typeof exp !== 'number' || !Number.isInteger(exp))
    throw fail(
      'spec.expirationSeconds',
      `Invalid value: ${JSON.stringify(exp)}: must be an integer`,
    );
  if (exp < MIN_EXPIRATION_SECONDS)
    throw fail(
      'spec.expirationSeconds',
      `Invalid value: ${exp}: may not specify a duration less than 10 minutes`,
    );
  if (exp > 2 ** 32)
    throw fail(
      'spec.expirationSeconds',
      `Invalid value: ${exp}: may not specify a duration larger than 2^32 seconds`,
    );
  const audiences = Array.isArray(spec.audiences)
    ? spec.audiences.filter((a): a is string => typeof a === 'string')
    : [];
  const ref = spec.boundObjectRef;
  const binding: TokenBinding = isObject(ref)
    ? resolveBinding(ref, saName, namespace, get, gates)
    : {};
  const { token, claims } = tokens.issue(
    namespace,
    { name: saName, uid: uidOf(sa) },
    { audiences, expirationSeconds: exp, binding },
  );
  return {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { name: saName, namespace, creationTimestamp: null },
    spec: {
      audiences: claims.aud,
      expirationSeconds: exp,
      boundObjectRef: isObject(ref) ? ref : null,
    },
    status: {
      token,
      expirationTimestamp: new Date(claims.exp * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    },
  };
}
