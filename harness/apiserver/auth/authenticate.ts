// Authentication as kube-apiserver chains it: a bearer token is the admin
// token, a static token-file token or a service-account token, or it is
// refused (401, even when anonymous requests are allowed); no credentials at
// all make the request anonymous when --anonymous allows it, else 401.
// Secrets are compared through digests (same-secret.ts), never with ===.
import { digest, sameDigest } from '../../../src/secrets/same-secret.ts';
import type { ServiceAccountTokens } from './service-account-tokens.ts';
import { anonymousUser, MASTERS, withAuthenticated, type UserInfo } from './user.ts';

export interface AuthenticatorOptions {
  /** The token the server's own kubeconfig carries (user kubernetes-admin, group system:masters). */
  adminToken: string;
  /** From --token-auth-file. */
  staticTokens?: Map<string, UserInfo>;
  serviceAccountTokens: ServiceAccountTokens;
  anonymous: boolean;
}

export const ADMIN_USER = 'kubernetes-admin';

/** The bearer token of an Authorization header; undefined when there is none. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^\s*bearer\s+(\S*)\s*$/i.exec(header);
  if (!m) return undefined; // another scheme (Basic): no authenticator here reads it
  return m[1] === '' ? undefined : m[1];
}

export class Authenticator {
  private readonly opts: AuthenticatorOptions;
  /** The static tokens by the hex SHA-256 of the token: a lookup never compares the secrets themselves. */
  private readonly byDigest = new Map<string, UserInfo>();
  /** Undefined when there is no admin token (an empty one matches nothing). */
  private readonly adminDigest: Buffer | undefined;
  constructor(opts: AuthenticatorOptions) {
    this.opts = opts;
    this.adminDigest = opts.adminToken === '' ? undefined : digest(opts.adminToken);
    for (const [t, u] of opts.staticTokens ?? []) this.byDigest.set(digest(t).toString('hex'), u);
  }

  /** The request's user, or why it gets 401 (for the log; the client sees "Unauthorized"). */
  check(authorization: string | undefined): { user: UserInfo } | { error: string } {
    const token = bearerToken(authorization);
    if (token === undefined)
      return this.opts.anonymous
        ? { user: anonymousUser() }
        : { error: 'no credentials and anonymous requests are not allowed' };
    // One digest of the presented token per request, for both lookups.
    const presented = digest(token);
    if (this.adminDigest && sameDigest(presented, this.adminDigest))
      return {
        user: withAuthenticated({ username: ADMIN_USER, uid: '', groups: [MASTERS], extra: {} }),
      };
    const fromFile = this.byDigest.get(presented.toString('hex'));
    if (fromFile) return { user: withAuthenticated(fromFile) };
    return this.opts.serviceAccountTokens.validate(token);
  }
}
