// Real kubectl for the tests that check the API server and the manifests
// from outside, as a user's kubectl sees them: the oldest and the newest
// supported versions, installed beside the kubectl on PATH as
// kubectl.<version> (a test without them is skipped or fails, as it says).
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The supported kubectl versions the tests run: the oldest and the newest. */
export const KUBECTL_VERSIONS = ['1.27', '1.33'] as const;

/** kubectl.<version>'s path, or undefined when it is not installed. */
export function kubectlBin(version: string): string | undefined {
  let dir: string;
  try {
    const onPath = execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim();
    dir = dirname(realpathSync(onPath));
  } catch {
    return undefined;
  }
  const bin = join(dir, `kubectl.${version}`);
  return existsSync(bin) ? bin : undefined;
}

/** kubectl.<version>'s path; throws when it is not installed (the test needs it). */
export function mustKubectl(version: string): string {
  const bin = kubectlBin(version);
  if (!bin) throw new Error(`kubectl.${version} is not installed beside the kubectl on PATH`);
  return bin;
}

export interface KubectlRun {
  /** The exit code (1 when it was killed or did not start). */
  code: number;
  out: string;
  err: string;
}

/**
 * Runs kubectl with `args` (and `input` on its stdin), asynchronously: the
 * API server it talks to runs in this process and must keep serving. Never
 * throws; a non-zero `code` says it failed.
 */
export function runKubectl(
  bin: string,
  args: string[],
  input?: string,
  timeoutMs = 20_000,
): Promise<KubectlRun> {
  return new Promise((resolve) => {
    const child = execFile(bin, args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, out: stdout, err: stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}
