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
import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileByRename } from '../secrets/private-file.ts';

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

/** Makes the token and writes both copies; returns the host copy's path. */
export function writeNodeApiToken(plan: NodeApiTokenPlan): string {
  const token = (plan.random ?? (() => randomBytes(32)))().toString('hex');
  mkdirSync(plan.runDir, { recursive: true });
  chownSync(plan.runDir, process.getuid?.() ?? 0, plan.sidecarGroup);
  chmodSync(plan.runDir, RUN_DIR_MODE);
  const host = join(plan.runDir, HOST_TOKEN_NAME);
  writeFileByRename(host, `${token}\n`, { mode: 0o600 });
  mkdirSync(dirname(plan.copy), { recursive: true });
  writeFileByRename(plan.copy, `${token}\n`, { mode: 0o400, owner: plan.copyOwner });
  return host;
}
