// The ARM endpoint and its check, apart from the SDK so the command line can
// validate --azure-endpoint without loading it. Plain http is allowed only to
// a loopback address (the emulator): our bearer policy sends the token
// wherever it is told to.

export const DEFAULT_ARM_ENDPOINT = 'https://management.azure.com';

/** Checks an endpoint: https anywhere, http only to loopback. Returns it without a trailing slash. */
export function checkEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`invalid ARM endpoint "${endpoint}"`);
  }
  if (url.protocol === 'http:') {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') {
      throw new Error(
        `ARM endpoint "${endpoint}": plain http is allowed only to a loopback address (an emulator)`,
      );
    }
  } else if (url.protocol !== 'https:') {
    throw new Error(`ARM endpoint "${endpoint}" must be https:// (or http:// to loopback)`);
  }
  if (url.pathname !== '/' || url.search !== '') {
    throw new Error(`ARM endpoint "${endpoint}" must be an origin, e.g. ${DEFAULT_ARM_ENDPOINT}`);
  }
  return url.origin;
}
