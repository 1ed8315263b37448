// Bound service-account tokens as Kubernetes issues them through the
// TokenRequest API: ES256-signed JWTs whose `kubernetes.io` claim names the
// namespace, the service account and the object the token is bound to (a
// Pod, whose node is embedded as Kubernetes >= 1.30 does, or a Node). A
// token is valid while it has not expired, carries the API server's
// audience, and the service account and bound object still exist with the
// uids it names and were not deleted more than a minute ago; its user gets
// the service-account groups and the authentication.kubernetes.io/* extras.
// The checks and their messages are kube-apiserver 1.30–1.33's
// (pkg/serviceaccount/claims.go, validator.Validate): a pod-bound token's
// node claims are information only ("for pod-bound tokens, just extract the
// node claims"), never checked against the Node; a node-bound token's are.
import { generateKeyPairSync, randomUUID, sign, verify, type KeyObject } from 'node:crypto';
import {
  EXTRA,
  SERVICE_ACCOUNTS,
  serviceAccountUsername,
  withAuthenticated,
  type UserInfo,
} from './user.ts';

export const API_AUDIENCE = 'https://kubernetes.default.svc.cluster.local';
export const DEFAULT_EXPIRATION_SECONDS = 3600;
export const MIN_EXPIRATION_SECONDS = 600;

export interface ObjectRef {
  name: string;
  uid: string;
}

/** What a token names besides its service account. */
export interface TokenBinding {
  pod?: ObjectRef;
  node?: ObjectRef;
}

export interface TokenClaims {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  iat: number;
  nbf: number;
  jti: string;
  'kubernetes.io': {
    namespace: string;
    serviceaccount: ObjectRef;
    pod?: ObjectRef;
    node?: ObjectRef;
  };
}

/** What validation needs of a stored object. */
export interface ObjectState {
  uid: string;
  /** metadata.deletionTimestamp (RFC 3339), when deletion is pending (finalizers). */
  deletionTimestamp?: string;
}

/** Looks an object up by kind (ServiceAccount, Pod, Node); undefined when absent. */
export type UidLookup = (
  kind: 'ServiceAccount' | 'Pod' | 'Node',
  namespace: string | undefined,
  name: string,
) => ObjectState | undefined;

/** A token's user, or why kube-apiserver would refuse it (logged; the client gets 401). */
export type Validation = { user: UserInfo } | { error: string };

/** go-jose's jwt.DefaultLeeway: objects deleted before now minus this invalidate their tokens. */
const LEEWAY_SECONDS = 60;
const INVALIDATED = 'service account token has been invalidated';

/** Verified tokens remembered at most (cleared beyond; a thousand nodes need a thousand). */
const MAX_VERIFIED = 20_000;

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

export class ServiceAccountTokens {
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  private readonly keyId = randomUUID();
  private readonly lookup: UidLookup;
  private readonly now: () => Date;
  /** Claims of tokens whose signature was checked: one ECDSA verify per token, not per request. */
  private readonly verified = new Map<string, TokenClaims>();

  constructor(lookup: UidLookup, now: () => Date = () => new Date()) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = privateKey;
    this.publicKey = publicKey;
    this.lookup = lookup;
    this.now = now;
  }

  /** Signs a token for `namespace/sa`, bound as given. */
  issue(
    namespace: string,
    sa: ObjectRef,
    opts: { audiences?: string[]; expirationSeconds?: number; binding?: TokenBinding } = {},
  ): { token: string; claims: TokenClaims } {
    const iat = Math.floor(this.now().getTime() / 1000);
    const claims: TokenClaims = {
      iss: API_AUDIENCE,
      sub: serviceAccountUsername(namespace, sa.name),
      aud: opts.audiences && opts.audiences.length > 0 ? opts.audiences : [API_AUDIENCE],
      exp: iat + (opts.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS),
      iat,
      nbf: iat,
      jti: randomUUID(),
      'kubernetes.io': {
        namespace,
        ...(opts.binding?.node ? { node: opts.binding.node } : {}),
        ...(opts.binding?.pod ? { pod: opts.binding.pod } : {}),
        serviceaccount: sa,
      },
    };
    const head = b64({ alg: 'ES256', kid: this.keyId });
    const body = b64(claims);
    const sig = sign('sha256', Buffer.from(`${head}.${body}`), {
      key: this.privateKey,
      dsaEncoding: 'ieee-p1363',
    }).toString('base64url');
    return { token: `${head}.${body}.${sig}`, claims };
  }

  /** The user of a token, or kube-apiserver's reason to refuse it (claims.go). */
  validate(token: string): Validation {
    const claims = this.verifiedClaims(token);
    if (!claims) return { error: 'not a service-account token signed by this server' };
    const k = claims['kubernetes.io'];
    const now = this.now().getTime() / 1000;
    if (!(claims.exp > now)) return { error: 'service account token has expired' };
    if (!(claims.nbf <= now + LEEWAY_SECONDS))
      return { error: 'service account token is not valid yet' };
    if (!claims.aud.includes(API_AUDIENCE))
      return { error: 'token audiences do not include the API server' };
    const deletedLongAgo = (o: ObjectState): boolean =>
      o.deletionTimestamp !== undefined &&
      Date.parse(o.deletionTimestamp) / 1000 < now - LEEWAY_SECONDS;
    const sa = this.lookup('ServiceAccount', k.namespace, k.serviceaccount.name);
    if (!sa) return { error: `serviceaccounts "${k.serviceaccount.name}" not found` };
    if (sa.uid !== k.serviceaccount.uid)
      return {
        error: `service account UID (${sa.uid}) does not match claim (${k.serviceaccount.uid})`,
      };
    if (deletedLongAgo(sa))
      return {
        error: `service account ${k.namespace}/${k.serviceaccount.name} has been deleted`,
      };
    if (k.pod) {
      const pod = this.lookup('Pod', k.namespace, k.pod.name);
      if (!pod) return { error: INVALIDATED };
      if (pod.uid !== k.pod.uid)
        return {
          error: `pod UID (${pod.uid}) does not match service account pod ref claim (${k.pod.uid})`,
        };
      if (deletedLongAgo(pod)) return { error: INVALIDATED };
    } else if (k.node) {
      const node = this.lookup('Node', undefined, k.node.name);
      if (!node) return { error: INVALIDATED };
      if (node.uid !== k.node.uid)
        return {
          error: `node UID (${node.uid}) does not match service account node ref claim (${k.node.uid})`,
        };
      if (deletedLongAgo(node)) return { error: INVALIDATED };
    }
    const extra: Record<string, string[]> = { [EXTRA.credentialId]: [`JTI=${claims.jti}`] };
    if (k.node) {
      extra[EXTRA.nodeName] = [k.node.name];
      if (k.node.uid !== '') extra[EXTRA.nodeUid] = [k.node.uid];
    }
    if (k.pod) {
      extra[EXTRA.podName] = [k.pod.name];
      extra[EXTRA.podUid] = [k.pod.uid];
    }
    return {
      user: withAuthenticated({
        username: claims.sub,
        uid: k.serviceaccount.uid,
        groups: [SERVICE_ACCOUNTS, `${SERVICE_ACCOUNTS}:${k.namespace}`],
        extra,
      }),
    };
  }

  private verifiedClaims(token: string): TokenClaims | undefined {
    const known = this.verified.get(token);
    if (known) return known;
    const claims = this.checkSignature(token);
    if (claims) {
      if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
      this.verified.set(token, claims);
    }
    return claims;
  }

  private checkSignature(token: string): TokenClaims | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    const [head, body, sig] = parts as [string, string, string];
    try {
      const h = JSON.parse(Buffer.from(head, 'base64url').toString()) as { alg?: string };
      if (h.alg !== 'ES256') return undefined;
      const ok = verify(
        'sha256',
        Buffer.from(`${head}.${body}`),
        { key: this.publicKey, dsaEncoding: 'ieee-p1363' },
        Buffer.from(sig, 'base64url'),
      );
      if (!ok) return undefined;
      const c = JSON.parse(Buffer.from(body, 'base64url').toString()) as TokenClaims;
      return typeof c['kubernetes.io']?.serviceaccount?.name === 'string' ? c : undefined;
    } catch {
      return undefined;
    }
  }
}
