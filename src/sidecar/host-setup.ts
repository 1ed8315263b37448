// What the DaemonSet's init container host-setup runs as root (`node
// src/sidecar/host-setup.ts install ...`), and the cleanup DaemonSet after
// an uninstall (`... uninstall ...`): Node's standard library only, so it
// starts in the image without the product's dependencies. One line per
// thing done; a bad argument or a refusal is one line on stderr and exit 1,
// so the pod's init container fails where `kubectl logs` shows why.
//
//   install --run-dir DIR --sidecar-user UID:GID --token-copy FILE
//           [--conflist-from DIR --cni-conf-dir DIR]
//   uninstall [--cni-conf-dir DIR] [--remove PATH]...
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { installConflist, removeConflist } from './cni-conflist.ts';
import { writeNodeApiToken } from './host-token.ts';

const say = (line: string): void => console.log(line);

function owner(text: string | undefined): { uid: number; gid: number } {
  const m = /^(\d+):(\d+)$/.exec(text ?? '');
  if (!m) throw new Error(`--sidecar-user must be UID:GID, got "${text ?? ''}"`);
  return { uid: Number(m[1]), gid: Number(m[2]) };
}

function install(args: string[]): void {
  const { values } = parseArgs({
    args,
    options: {
      'run-dir': { type: 'string' },
      'sidecar-user': { type: 'string' },
      'token-copy': { type: 'string' },
      'conflist-from': { type: 'string' },
      'cni-conf-dir': { type: 'string' },
    },
    strict: true,
  });
  const runDir = values['run-dir'];
  const copy = values['token-copy'];
  if (!runDir || !copy) throw new Error('install needs --run-dir and --token-copy');
  const user = owner(values['sidecar-user']);
  if ((values['conflist-from'] === undefined) !== (values['cni-conf-dir'] === undefined))
    throw new Error('--conflist-from and --cni-conf-dir go together');
  // The conflist first: a refusal leaves everything as it was.
  if (values['conflist-from'] && values['cni-conf-dir'])
    installConflist(values['conflist-from'], values['cni-conf-dir'], say);
  const host = writeNodeApiToken({ runDir, sidecarGroup: user.gid, copy, copyOwner: user });
  say(`wrote a new node API token: ${host} (0600) and ${copy} (0400, ${user.uid})`);
}

function uninstall(args: string[]): void {
  const { values } = parseArgs({
    args,
    options: {
      'cni-conf-dir': { type: 'string' },
      remove: { type: 'string', multiple: true },
    },
    strict: true,
  });
  if (values['cni-conf-dir']) removeConflist(values['cni-conf-dir'], say);
  for (const path of values.remove ?? []) {
    rmSync(path, { recursive: true, force: true });
    say(`removed ${path}`);
  }
}

try {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'install') install(rest);
  else if (command === 'uninstall') uninstall(rest);
  else throw new Error(`the command must be install or uninstall, got "${command ?? ''}"`);
} catch (err) {
  console.error(`host-setup: ${(err as Error).message}`);
  process.exitCode = 1;
}
