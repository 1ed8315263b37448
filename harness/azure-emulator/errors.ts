// An ARM error answer: HTTP status, `{error: {code, message}}` body, and
// optional headers (Retry-After).

export class ArmHttpError extends Error {
  override readonly name = 'ArmHttpError';
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }

  body(): { error: { code: string; message: string; details: unknown[] } } {
    return { error: { code: this.code, message: this.message, details: [] } };
  }
}

export const badRequest = (code: string, message: string): ArmHttpError =>
  new ArmHttpError(400, code, message);
