// Reads a JSON request body with a hard size limit. The limit is checked on
// the declared Content-Length first and then on the bytes actually received,
// so a lying or chunked client cannot make the sidecar buffer more than
// `limit` bytes. Invalid UTF-8 and invalid JSON are refused, never guessed.
// Like CNS, the body is read as JSON whatever the Content-Type says: CNI
// plugins and `curl -d` do not all send application/json.
import type { IncomingMessage } from 'node:http';

export type BodyResult =
  { ok: true; value: unknown } | { ok: false; status: 400 | 413; error: string };

export const DEFAULT_BODY_LIMIT = 64 * 1024;

export function readJsonBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    return Promise.resolve({
      ok: false,
      status: 413,
      error: `request body of ${declared} bytes exceeds the limit of ${limit} bytes`,
    });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: BodyResult): void => {
      if (done) return;
      done = true;
      req.off('data', onData);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        finish({
          ok: false,
          status: 413,
          error: `request body exceeds the limit of ${limit} bytes`,
        });
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('error', (err) => finish({ ok: false, status: 400, error: err.message }));
    req.on('end', () => {
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
      } catch {
        finish({ ok: false, status: 400, error: 'request body is not valid UTF-8' });
        return;
      }
      if (text.trim() === '') {
        finish({ ok: false, status: 400, error: 'request body is empty' });
        return;
      }
      try {
        finish({ ok: true, value: JSON.parse(text) as unknown });
      } catch (err) {
        finish({
          ok: false,
          status: 400,
          error: `request body is not valid JSON: ${(err as Error).message}`,
        });
      }
    });
  });
}
