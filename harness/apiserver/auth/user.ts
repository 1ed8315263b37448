// Who a request is, as Kubernetes' authenticators describe a user: name,
// uid, groups and extra (string lists keyed by name).

export interface UserInfo {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
}

export const AUTHENTICATED = 'system:authenticated';
export const UNAUTHENTICATED = 'system:unauthenticated';
export const MASTERS = 'system:masters';
export const ANONYMOUS = 'system:anonymous';
export const SERVICE_ACCOUNTS = 'system:serviceaccounts';
export const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';

/** The user extras Kubernetes >= 1.30 puts on a bound service-account token's user. */
export const EXTRA = {
  credentialId: 'authentication.kubernetes.io/credential-id',
  nodeName: 'authentication.kubernetes.io/node-name',
  nodeUid: 'authentication.kubernetes.io/node-uid',
  podName: 'authentication.kubernetes.io/pod-name',
  podUid: 'authentication.kubernetes.io/pod-uid',
} as const;

export const anonymousUser = (): UserInfo => ({
  username: ANONYMOUS,
  uid: '',
  groups: [UNAUTHENTICATED],
  extra: {},
});

/** Adds system:authenticated, as kube-apiserver does for every authenticated user. */
export function withAuthenticated(u: UserInfo): UserInfo {
  return u.groups.includes(AUTHENTICATED) ? u : { ...u, groups: [...u.groups, AUTHENTICATED] };
}

export function serviceAccountUsername(namespace: string, name: string): string {
  return `${SERVICE_ACCOUNT_PREFIX}${namespace}:${name}`;
}

/** [namespace, name] of a service-account username, or undefined. */
export function parseServiceAccountUsername(username: string): [string, string] | undefined {
  if (!username.startsWith(SERVICE_ACCOUNT_PREFIX)) return undefined;
  const parts = username.slice(SERVICE_ACCOUNT_PREFIX.length).split(':');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return undefined;
  return [parts[0], parts[1]];
}

/** The SelfSubjectReview (authentication.k8s.io/v1) answer for `user`. */
export function selfSubjectReview(user: UserInfo): Record<string, unknown> {
  const userInfo: Record<string, unknown> = { username: user.username, groups: user.groups };
  if (user.uid) userInfo.uid = user.uid;
  if (Object.keys(user.extra).length > 0) userInfo.extra = user.extra;
  return {
    kind: 'SelfSubjectReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    status: { userInfo },
  };
}
