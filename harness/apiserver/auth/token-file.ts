// kube-apiserver's static token file (--token-auth-file): CSV rows
// `token,user,uid[,"group1,group2"]`. Pure: parsed here, read by the caller.
import type { UserInfo } from './user.ts';

export class TokenFileError extends Error {
  override readonly name = 'TokenFileError';
}

/** Splits one CSV line (RFC 4180 quoting, leading spaces trimmed as Go's csv.Reader does). */
export function csvFields(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    let field = '';
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) throw new TokenFileError('unterminated quoted field');
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += line[i++];
      }
      if (i < line.length && line[i] !== ',')
        throw new TokenFileError(`extraneous text after a quoted field: ${line.slice(i)}`);
    } else {
      const end = line.indexOf(',', i);
      field = end < 0 ? line.slice(i) : line.slice(i, end);
      if (field.includes('"')) throw new TokenFileError(`bare " in a field: ${field}`);
      i = end < 0 ? line.length : end;
    }
    out.push(field);
    if (i >= line.length) return out;
    i++; // the comma
  }
}

/** Token → user (without system:authenticated, which authentication adds). */
export function parseTokenFile(text: string): Map<string, UserInfo> {
  const users = new Map<string, UserInfo>();
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    const where = `line ${i + 1}`;
    let f: string[];
    try {
      f = csvFields(line);
    } catch (err) {
      throw new TokenFileError(`${where}: ${(err as Error).message}`);
    }
    if (f.length < 3)
      throw new TokenFileError(
        `${where}: needs at least 3 columns (token, user name, user uid), found ${f.length}`,
      );
    const [token, username, uid] = f as [string, string, string];
    if (token === '') throw new TokenFileError(`${where}: empty token`);
    if (username === '') throw new TokenFileError(`${where}: empty user name`);
    if (users.has(token)) throw new TokenFileError(`${where}: duplicate token`);
    const groups = (f[3] ?? '')
      .split(',')
      .map((g) => g.trim())
      .filter((g) => g !== '');
    users.set(token, { username, uid, groups, extra: {} });
  });
  return users;
}
