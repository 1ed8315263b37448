// The authorizer chain of kube-apiserver for --authorization-mode
// AlwaysAllow|RBAC: members of system:masters may do anything; then the mode.
// A denial becomes the 403 Status kube-apiserver sends.
import { ApiError, qualified } from '../errors.ts';
import { forbiddenMessage, type Decision, type RequestAttributes } from './rbac.ts';
import type { AuthorizationMode } from './modes.ts';
import { MASTERS } from './user.ts';

export { AUTHORIZATION_MODES, type AuthorizationMode } from './modes.ts';

export function authorize(
  mode: AuthorizationMode,
  a: RequestAttributes,
  rbac: { decide(a: RequestAttributes): Decision },
): Decision {
  if (a.user.groups.includes(MASTERS) || mode === 'AlwaysAllow')
    return { allowed: true, reason: '' };
  return rbac.decide(a);
}

/** The 403 for a denied request, worded as kube-apiserver words it. */
export function forbidden(a: RequestAttributes, reason: string): ApiError {
  const why = forbiddenMessage(a) + (reason ? `: ${reason}` : '');
  if (!a.resourceRequest) return new ApiError(403, 'Forbidden', `forbidden: ${why}`, {});
  const what = qualified(a.apiGroup, a.resource);
  const message = a.name
    ? `${what} "${a.name}" is forbidden: ${why}`
    : `${what} is forbidden: ${why}`;
  return new ApiError(403, 'Forbidden', message, {
    ...(a.name ? { name: a.name } : {}),
    group: a.apiGroup,
    kind: a.resource,
  });
}

export const unauthorized = (): ApiError => new ApiError(401, 'Unauthorized', 'Unauthorized');
