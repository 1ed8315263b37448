// The CNI spec's error result and its codes (spec 1.1.0, "Error"): codes
// 1-99 are the spec's own, a plugin's own start at 100. Every failure of
// the plugin is one CniError, written to stdout as the error JSON with a
// non-zero exit.

export const CniCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironment: 4,
  IoFailure: 5,
  DecodeFailure: 6,
  InvalidConfig: 7,
  TryAgainLater: 11,
  /** STATUS: the plugin cannot serve ADDs now. */
  NotAvailable: 50,
  /** The node API refused the plugin's token (401/403). */
  NodeApiRefused: 100,
  /** The node API answered a request with an error of its own (4xx, a CNS ReturnCode). */
  NodeApiError: 101,
  /** CHECK: the sidecar holds another address for the attachment than the runtime's result. */
  AddressMismatch: 102,
} as const;

export class CniError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, msg: string, details = '') {
    super(msg);
    this.name = 'CniError';
    this.code = code;
    this.details = details;
  }

  /** The spec's error JSON. */
  toJSON(cniVersion: string): Record<string, unknown> {
    return {
      cniVersion,
      code: this.code,
      msg: this.message,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

export const invalidConfig = (key: string, why: string): CniError =>
  new CniError(CniCode.InvalidConfig, `invalid network configuration: ${key} ${why}`);
