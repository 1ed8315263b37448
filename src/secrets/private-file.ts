// Writing a file that holds a token or a key: the bytes go to a temp file
// created 0600 (and fchmod'ed to 0600, whatever the umask) in the target's
// directory, are flushed, and the temp file is renamed over the target. A
// reader sees the old file or the new one, never a partial one, and the
// secret is never readable by others, not even when the target existed with
// a wider mode (rename replaces the inode, mode included). A directory made
// on the way is 0700. On failure the temp file is removed and the target is
// left as it was. `writeFileByRename` does the same for a file of another
// mode or owner (the node API token's copies, a CNI configuration).
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fchownSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

export function writePrivateFile(path: string, data: string | Uint8Array): void {
  writeFileByRename(path, data, { mode: PRIVATE_FILE_MODE, dirMode: PRIVATE_DIR_MODE });
}

/**
 * Writes a file as above with its own `mode` (and, as root, `owner`), set
 * on the temp file before the rename: a configuration others read (0644),
 * a token only its reader may open (0400 and another owner). A directory
 * made on the way gets `dirMode` (0700 by default).
 */
export function writeFileByRename(
  path: string,
  data: string | Uint8Array,
  options: { mode: number; owner?: { uid: number; gid: number }; dirMode?: number },
): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: options.dirMode ?? PRIVATE_DIR_MODE });
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    // Created private, whatever the mode asked: nobody reads it half-written.
    fd = openSync(tmp, 'wx', PRIVATE_FILE_MODE);
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
    if (options.owner) fchownSync(fd, options.owner.uid, options.owner.gid);
    fchmodSync(fd, options.mode); // the umask narrowed nothing it should keep, widened nothing
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
}
