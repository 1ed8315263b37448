// The node API's token on the node (docs/decisions/0037): a new random token
// at every start of the DaemonSet's pod, written by its init container
// (root) twice: the host's copy in the socket's directory, where the CNI
// plugin looks by default (/run/pool-monitor/node-api-token, root's, 0600:
// the plugin refuses a token file group or others may open), and the
// sidecar's copy in a memory-backed emptyDir (its user's, 0400). The
// directory is the sidecar's group's to create its socket in, sticky, so the
// sidecar can replace its own socket but never the root-owned token. Each
// file is written under a temporary name and renamed: a plugin reads the old
// token or the new one, never half of one.
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** The host copy's name in the run directory: the plugin's default tokenFile. */
export const HOST_TOKEN_NAME = 'node-api-token';
/** The run directory: root's, the sidecar's group may create entries, sticky. */
export const RUN_DIR_MODE = 0o1770;

export interface NodeApiTokenPlan {
  /** The socket's and the host token's directory (the hostPath /run/pool-monitor). */
  runDir: string;
  /** The sidecar's group (its socket goes into runDir). */
  sidecarGroup: number;
  /** The sidecar's copy, and its owner. */
  copy: string;
  copyOwner: { uid: number; gid: number };
  /** 32 random bytes by default. */
  random?: () => Buffer;
}

/** Writes `text` to `path` by rename, the file created with `mode` and owned by `owner` first. */
export function writeByRename(
  path: string,
  text: string,
  mode: number,
  owner?: { uid: number; gid: number },
): void {
  const tmp = join(dirname(path), `.${basename(path)}.tmp`);
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, 'wx', mode);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    chmodSync(tmp, mode); // the umask narrowed nothing it should keep, widened nothing
    if (owner) chownSync(tmp, owner.uid, owner.gid);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Makes the token and writes both copies; returns the host copy's path. */
export function writeNodeApiToken(plan: NodeApiTokenPlan): string {
  const token = (plan.random ?? (() => randomBytes(32)))().toString('hex');
  mkdirSync(plan.runDir, { recursive: true });
  chownSync(plan.runDir, process.getuid?.() ?? 0, plan.sidecarGroup);
  chmodSync(plan.runDir, RUN_DIR_MODE);
  const host = join(plan.runDir, HOST_TOKEN_NAME);
  writeByRename(host, `${token}\n`, 0o600);
  mkdirSync(dirname(plan.copy), { recursive: true });
  writeByRename(plan.copy, `${token}\n`, 0o400, plan.copyOwner);
  return host;
}
