// Turns whatever the Kubernetes client throws into the two facts retry logic
// needs: the HTTP status and the server's Retry-After. client-node 2.x throws
// ApiException {code, headers, body}; watches throw Errors with `statusCode`;
// network failures carry neither.

export interface ApiErrorInfo {
  /** HTTP status, when the server answered. */
  statusCode: number | undefined;
  /** Retry-After in seconds, when the server sent one. */
  retryAfterSeconds: number | undefined;
  /** A one-line description for logs and Events. */
  message: string;
}

function headerValue(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const v = (headers as { get(n: string): unknown }).get(name);
    return typeof v === 'string' ? v : undefined;
  }
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (key.toLowerCase() === name) {
      if (typeof value === 'string') return value;
      if (Array.isArray(value) && typeof value[0] === 'string') return value[0];
    }
  }
  return undefined;
}

/** Parses a Retry-After value: delta-seconds or an HTTP date. */
export function parseRetryAfter(
  value: string | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

/** The Status object's message when the body is one, as text or JSON. */
function bodyMessage(body: unknown): string | undefined {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return body.length > 0 && body.length < 300 ? body : undefined;
    }
  }
  if (
    parsed &&
    typeof parsed === 'object' &&
    typeof (parsed as { message?: unknown }).message === 'string'
  ) {
    return (parsed as { message: string }).message;
  }
  return undefined;
}

function bodyRetryAfter(body: unknown): number | undefined {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const seconds = (parsed as { details?: { retryAfterSeconds?: unknown } } | undefined)?.details
    ?.retryAfterSeconds;
  return typeof seconds === 'number' && seconds > 0 ? seconds : undefined;
}

/** Extracts status code, Retry-After and a message from any thrown value. */
export function apiErrorInfo(err: unknown): ApiErrorInfo {
  if (!err || typeof err !== 'object') {
    return { statusCode: undefined, retryAfterSeconds: undefined, message: String(err) };
  }
  const e = err as {
    code?: unknown;
    statusCode?: unknown;
    headers?: unknown;
    body?: unknown;
    message?: unknown;
  };
  const statusCode =
    typeof e.code === 'number' && e.code >= 100 && e.code < 600
      ? e.code
      : typeof e.statusCode === 'number'
        ? e.statusCode
        : undefined;
  const retryAfterSeconds =
    parseRetryAfter(headerValue(e.headers, 'retry-after')) ?? bodyRetryAfter(e.body);
  const detail = bodyMessage(e.body);
  const base = typeof e.message === 'string' ? e.message.split('\n')[0]! : String(err);
  const message =
    statusCode !== undefined
      ? `HTTP ${statusCode}${detail ? `: ${detail}` : base ? `: ${base}` : ''}`
      : base;
  return { statusCode, retryAfterSeconds, message };
}

export const isConflict = (err: unknown): boolean => apiErrorInfo(err).statusCode === 409;
export const isNotFound = (err: unknown): boolean => apiErrorInfo(err).statusCode === 404;
export const isAlreadyExists = isConflict;

/** True for failures a retry cannot fix (bad request, forbidden, invalid). */
export function isPermanent(err: unknown): boolean {
  const code = apiErrorInfo(err).statusCode;
  return code === 400 || code === 401 || code === 403 || code === 404 || code === 422;
}
