// Where the ARM bearer token comes from: a file (`--azure-token-file`)
// holding an ARM access token (audience https://management.azure.com, e.g.
// from `az account get-access-token`, kept fresh by whoever writes it, maybe
// through a Secret volume), or an Azure Identity credential
// (DefaultAzureCredential: workload identity, managed identity, environment).
// A Kubernetes service-account token is not an ARM token (ARM answers 401):
// for workload identity, DefaultAzureCredential exchanges the federated token
// itself (AZURE_FEDERATED_TOKEN_FILE). A token is never logged and never part
// of an error message.
//
// The file is stat'ed (following symlinks) before each use and re-read when
// its identity or modification time changed: the kubelet swaps projected
// volumes by re-pointing a `..data` symlink, so the path stays the same while
// the file behind it is new. One stat per ARM call is cheap at a few calls a
// second, and needs no watcher to clean up.
import { readFile, stat } from 'node:fs/promises';
import type { TokenCredential } from '@azure/core-auth';

export interface BearerTokenSource {
  /** The current token. Throws a one-line error (without the token) when none can be had. */
  token(signal?: AbortSignal): Promise<string>;
  /** Forget any cached token (after a 401): the next call reads afresh. */
  invalidate(): void;
  /** For logs: where tokens come from, never the token. */
  readonly description: string;
}

export class TokenFileSource implements BearerTokenSource {
  readonly description: string;
  private readonly path: string;
  private cached?: { version: string; token: string };

  constructor(path: string) {
    this.path = path;
    this.description = `token file ${path}`;
  }

  async token(): Promise<string> {
    let version: string;
    try {
      const s = await stat(this.path);
      version = `${s.dev}:${s.ino}:${s.mtimeMs}:${s.size}`;
    } catch (err) {
      throw new Error(
        `cannot read token file ${this.path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
    if (this.cached?.version === version) return this.cached.token;
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      throw new Error(
        `cannot read token file ${this.path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
    const token = text.trim();
    if (token === '' || /\s/.test(token)) {
      throw new Error(`token file ${this.path} does not hold one bearer token`);
    }
    this.cached = { version, token };
    return token;
  }

  invalidate(): void {
    this.cached = undefined;
  }
}

/** Tokens are renewed this long before they expire. */
export const TOKEN_REFRESH_MARGIN_MS = 5 * 60_000;

export class CredentialTokenSource implements BearerTokenSource {
  readonly description: string;
  private readonly credential: TokenCredential;
  private readonly scope: string;
  private readonly now: () => number;
  private cached?: { token: string; renewAt: number };
  private inFlight?: Promise<string>;

  constructor(
    credential: TokenCredential,
    scope: string,
    description: string,
    now: () => number = Date.now,
  ) {
    this.credential = credential;
    this.scope = scope;
    this.description = description;
    this.now = now;
  }

  async token(signal?: AbortSignal): Promise<string> {
    if (this.cached && this.now() < this.cached.renewAt) return this.cached.token;
    this.inFlight ??= this.fetch(signal).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async fetch(signal?: AbortSignal): Promise<string> {
    let access;
    try {
      access = await this.credential.getToken(this.scope, signal ? { abortSignal: signal } : {});
    } catch (err) {
      // Identity errors explain what is missing (no managed identity, no
      // federated token file); they do not carry secrets.
      throw new Error(
        `cannot get an ARM token from ${this.description}: ${(err as Error).message}`,
      );
    }
    if (!access?.token) throw new Error(`${this.description} returned no ARM token`);
    const renewAt = Math.min(
      access.refreshAfterTimestamp ?? Infinity,
      access.expiresOnTimestamp - TOKEN_REFRESH_MARGIN_MS,
    );
    this.cached = { token: access.token, renewAt };
    return access.token;
  }

  invalidate(): void {
    this.cached = undefined;
  }
}

/** The scope of an ARM endpoint: `https://management.azure.com/.default`. */
export function armScope(endpoint: string): string {
  return `${new URL(endpoint).origin}/.default`;
}

/** DefaultAzureCredential (loaded only when used: it pulls in MSAL). */
export async function defaultCredentialSource(endpoint: string): Promise<BearerTokenSource> {
  const { DefaultAzureCredential } = await import('@azure/identity');
  return new CredentialTokenSource(
    new DefaultAzureCredential(),
    armScope(endpoint),
    'DefaultAzureCredential',
  );
}
