// The node store holds every pod's IP and interface id on the node: only
// its owner may read it. The state dir is made 0700 and ipstore.db 0600
// (created so before SQLite opens it, and narrowed when an older version or
// a wider umask left it readable); SQLite's unix VFS gives the -wal and -shm
// files the database file's mode, and they are narrowed too when present.
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

export const STATE_DIR_MODE = 0o700;
export const STORE_FILE_MODE = 0o600;

/** Before the database opens: dir 0700, `file` present and 0600. */
export function secureStoreFiles(file: string): void {
  chmodSync(dirname(file), STATE_DIR_MODE);
  if (!existsSync(file)) closeSync(openSync(file, 'a', STORE_FILE_MODE));
  narrowStoreFiles(file);
}

/** The database file and its -wal/-shm at 0600 (those present). */
export function narrowStoreFiles(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`])
    if (existsSync(f)) chmodSync(f, STORE_FILE_MODE);
}
