// metav1.Status error bodies, as the real API server returns them. Handlers
// throw ApiError; the server turns it into the HTTP status and JSON body.

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: StatusDetails | undefined;
  constructor(code: number, reason: string, message: string, details?: StatusDetails) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  toStatus(): Record<string, unknown> {
    return statusBody(this.code, this.reason, this.message, this.details);
  }
}

export function statusBody(
  code: number,
  reason: string,
  message: string,
  details?: StatusDetails,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: code < 400 ? 'Success' : 'Failure',
    message,
    reason,
    code,
  };
  if (details) body.details = details;
  return body;
}

/** "group/resource" as the real server spells it in messages ("pods", "nodenetworkconfigs.acn.azure.com"). */
export function qualified(group: string, plural: string): string {
  return group ? `${plural}.${group}` : plural;
}

export const notFound = (group: string, plural: string, name: string): ApiError =>
  new ApiError(404, 'NotFound', `${qualified(group, plural)} "${name}" not found`, {
    name,
    group: group || undefined,
    kind: plural,
  } as StatusDetails);

export const alreadyExists = (group: string, plural: string, name: string): ApiError =>
  new ApiError(409, 'AlreadyExists', `${qualified(group, plural)} "${name}" already exists`, {
    name,
    group,
    kind: plural,
  });

export const conflict = (group: string, plural: string, name: string, why: string): ApiError =>
  new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(group, plural)} "${name}": ${why}`,
    { name, group, kind: plural },
  );

export const badRequest = (message: string): ApiError => new ApiError(400, 'BadRequest', message);

/** An error list as k8s.io/apimachinery's utilerrors.Aggregate prints it: one alone, several in brackets. */
const aggregate = (msgs: string[]): string =>
  msgs.length === 1 ? (msgs[0] as string) : `[${msgs.join(', ')}]`;

export const invalid = (
  kind: string,
  group: string,
  name: string,
  causes: StatusCause[],
): ApiError =>
  new ApiError(
    422,
    'Invalid',
    `${kind}${group ? '.' + group : ''} "${name}" is invalid: ${aggregate(
      causes.map((c) => `${c.field ?? ''}: ${c.message ?? ''}`),
    )}`,
    { name, group, kind, causes },
  );

export const gone = (message: string): ApiError => new ApiError(410, 'Expired', message);

export const methodNotAllowed = (message: string): ApiError =>
  new ApiError(405, 'MethodNotAllowed', message);

export const unsupportedMediaType = (contentType: string): ApiError =>
  new ApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format: ${contentType}`,
  );

export const tooLarge = (limit: number): ApiError =>
  new ApiError(
    413,
    'RequestEntityTooLarge',
    `the request body is larger than the limit of ${limit} bytes`,
  );
