// The values of --authorization-mode, apart from the authorizer: the command
// line needs them without loading the server.
export const AUTHORIZATION_MODES = ['AlwaysAllow', 'RBAC'] as const;
export type AuthorizationMode = (typeof AUTHORIZATION_MODES)[number];
