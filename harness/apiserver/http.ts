// The HTTP plumbing of the local API server (server.ts): request bodies with a
// size limit, JSON or YAML parsing, JSON answers and metav1.Status errors,
// and the response of a request whose answer is lost.
import type { IncomingMessage, ServerResponse } from 'node:http';
import YAML from 'yaml';
import { badRequest, tooLarge, type ApiError } from './errors.ts';
import type { Json } from '../../src/kube/json-object.ts';
import { repeatsFields } from './validation/json-scan.ts';

class HttpError extends Error {}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > limit) {
        failed = true;
        reject(tooLarge(limit));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks));
    });
    req.on('error', (e) => {
      if (!failed) reject(new HttpError(e.message));
    });
  });
}

/**
 * A YAML body that is plain JSON, parsed as JSON: client-node sends every
 * apply patch that way (JSON is YAML's flow style), and the yaml library
 * builds a whole document model for it, a hundred times slower. Only where
 * both parsers agree: JSON.parse keeps the last of duplicate keys where the
 * YAML parse (uniqueKeys) refuses them; such a body, one with a "__proto__"
 * key, or any that is not a JSON object is left to the YAML parser (undefined).
 */
export function jsonInYaml(text: string): Json | undefined {
  if (!text.trimStart().startsWith('{') || text.includes('"__proto__"')) return undefined;
  let value: Json;
  try {
    value = JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
  return repeatsFields(text, value) ? undefined : value;
}

export /** Parses a request body as JSON, or YAML when the content type says so. */
function parseBody(buf: Buffer, contentType: string): Json {
  const text = buf.toString('utf8');
  if (text.trim() === '') throw badRequest('the request body is empty');
  const yaml = /yaml/.test(contentType);
  try {
    if (yaml) {
      const json = jsonInYaml(text);
      if (json !== undefined) return json;
      const doc = YAML.parseDocument(text, { uniqueKeys: true });
      if (doc.errors.length > 0) throw new Error(doc.errors[0]?.message ?? 'invalid YAML');
      return doc.toJS() as Json;
    }
    return JSON.parse(text) as Json;
  } catch (err) {
    throw badRequest(`error decoding ${yaml ? 'YAML' : 'JSON'} body: ${(err as Error).message}`);
  }
}

export const truthy = (v: string | null): boolean => v === 'true' || v === '1';

/**
 * The response of a request whose answer is lost (an `afterCommit` fault):
 * whatever the handler writes goes nowhere; the error is sent instead.
 */
export function unanswered(res: ServerResponse): ServerResponse {
  const ignore = new Set([
    'writeHead',
    'write',
    'end',
    'setHeader',
    'appendHeader',
    'flushHeaders',
  ]);
  return new Proxy(res, {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && ignore.has(prop)) return () => receiver as unknown;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

export function send(
  res: ServerResponse,
  code: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(code, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
export function sendError(res: ServerResponse, err: ApiError): void {
  const headers: Record<string, string> = {};
  if (err.details?.retryAfterSeconds !== undefined)
    headers['Retry-After'] = String(err.details.retryAfterSeconds);
  send(res, err.code, err.toStatus(), headers);
}
