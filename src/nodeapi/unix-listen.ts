// Binding the node API to a unix socket: only processes that may open the
// socket file (its owner, root, and the group given) reach the API. The
// socket is bound under a 0177 umask (created 0600, never wider even for a
// moment) and then set to 0660 with its group. A socket file left by a
// killed sidecar (nobody accepts on it) is replaced; a socket another
// process serves, or a path that is not a socket, is refused.
import { chmodSync, chownSync, lstatSync, mkdirSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { dirname } from 'node:path';

export const SOCKET_MODE = 0o660;

export interface UnixListenOptions {
  /** Group of the socket file (numeric gid); the process's own when absent. */
  gid?: number;
}

/** Resolves true when a process accepts connections on `path`. */
function served(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Removes a stale socket at `path`; throws when it may not be replaced. */
export async function clearSocketPath(path: string): Promise<void> {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return; // nothing there
  }
  if (!st.isSocket()) throw new Error(`${path}: exists and is not a socket`);
  if (await served(path)) throw new Error(`${path}: another process serves this socket`);
  rmSync(path, { force: true });
}

export async function listenUnix(
  server: Server,
  path: string,
  opts: UnixListenOptions,
): Promise<void> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
  await clearSocketPath(path);
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    // The bind happens within listen(): the narrowed umask covers it.
    const umask = process.umask(0o177);
    try {
      server.listen(path, () => {
        server.off('error', onError);
        resolve();
      });
    } finally {
      process.umask(umask);
    }
  });
  try {
    if (opts.gid !== undefined) chownSync(path, process.getuid?.() ?? 0, opts.gid);
    chmodSync(path, SOCKET_MODE);
  } catch (err) {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(path, { force: true });
    throw err;
  }
}
