// Files that hold a token or a key: written to a temp file created 0600 in
// the same directory, then renamed over the target, so the secret is never
// readable by others, not even for a moment, whatever the umask and
// whatever mode an existing file had.
import { expect } from 'chai';
import {
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeKubeconfig } from '../../harness/apiserver/kubeconfig.ts';
import { writePrivateFile } from '../../src/secrets/private-file.ts';

const mode = (p: string): number => statSync(p).mode & 0o777;

describe('files: secrets written 0600 through a temp file and a rename', () => {
  let dir: string;
  let umask: number;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'private-file-'));
    umask = process.umask(0o022);
  });
  afterEach(() => {
    process.umask(umask);
    rmSync(dir, { recursive: true, force: true });
  });

  it('writeKubeconfig over an existing 0644 file leaves it 0600 with the new token', () => {
    const path = join(dir, 'kubeconfig');
    writeFileSync(path, 'old', { mode: 0o644 });
    chmodSync(path, 0o644);
    writeKubeconfig(path, 'http://127.0.0.1:1', { token: 'the-admin-token' });
    expect(mode(path).toString(8)).to.equal('600');
    expect(readFileSync(path, 'utf8')).to.contain('the-admin-token');
    expect(readdirSync(dir)).to.deep.equal(['kubeconfig']);
  });

  it('a new file is 0600 under umask 0', () => {
    process.umask(0);
    const path = join(dir, 'sub', 'token');
    writePrivateFile(path, 'secret');
    expect(mode(path).toString(8)).to.equal('600');
    expect(readFileSync(path, 'utf8')).to.equal('secret');
  });

  it('a failed write leaves the old file and no temp file', () => {
    const path = join(dir, 'token');
    writePrivateFile(path, 'first');
    expect(() => writePrivateFile(join(dir, 'token', 'below-a-file'), 'x')).to.throw();
    expect(readFileSync(path, 'utf8')).to.equal('first');
    expect(readdirSync(dir)).to.deep.equal(['token']);
  });
});
