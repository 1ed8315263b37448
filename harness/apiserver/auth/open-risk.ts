// What an API server's access settings let through, said at start: a server
// that takes anonymous requests, or lets every user write everything
// (AlwaysAllow), is fine for a demo and wrong anywhere else, and must not be
// so silently. Undefined when the server is as strict as a real cluster.
import type { AuthorizationMode } from './modes.ts';

export function openServerRisk(mode: AuthorizationMode, anonymous: boolean): string | undefined {
  if (mode === 'AlwaysAllow' && anonymous)
    return 'anonymous requests are allowed and --authorization-mode AlwaysAllow lets every user, anonymous included, read and write everything; use --token-auth-file and --authorization-mode RBAC';
  if (mode === 'AlwaysAllow')
    return 'every authenticated user may read and write everything (--authorization-mode AlwaysAllow); use --authorization-mode RBAC';
  if (anonymous)
    return 'anonymous requests are allowed (as system:anonymous, with what RBAC grants system:unauthenticated); use --anonymous false';
  return undefined;
}
