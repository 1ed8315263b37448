// Writing a file that holds a token or a key: the bytes go to a temp file
// created 0600 (and fchmod'ed to 0600, whatever the umask) in the target's
// directory, are flushed, and the temp file is renamed over the target. A
// reader sees the old file or the new one, never a partial one, and the
// secret is never readable by others, not even when the target existed with
// a wider mode (rename replaces the inode, mode included). A directory made
// on the way is 0700. On failure the temp file is removed and the target is
// left as it was.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
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
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'wx', PRIVATE_FILE_MODE);
    fchmodSync(fd, PRIVATE_FILE_MODE);
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
}
