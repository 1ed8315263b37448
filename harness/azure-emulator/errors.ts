// An ARM error answer: HTTP status, the `{error: {code, message, details}}`
// body ARM's error contract gives (Azure REST API guidelines, "Error
// response": a `details` array of errors with their own code and message),
// and optional headers (Retry-After).

export interface ErrorDetail {
  code: string;
  message: string;
  target?: string;
}

export class ArmHttpError extends Error {
  override readonly name = 'ArmHttpError';
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;
  readonly details: ErrorDetail[];

  constructor(
    status: number,
    code: string,
    message: string,
    headers: Record<string, string> = {},
    details: ErrorDetail[] = [],
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
    this.details = details;
  }

  body(): { error: { code: string; message: string; details: ErrorDetail[] } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export const badRequest = (code: string, message: string): ArmHttpError =>
  new ArmHttpError(400, code, message);
