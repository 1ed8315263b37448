// kubectl's typed clients send a TokenRequest as Kubernetes protobuf
// ("k8s\0" + runtime.Unknown wrapping the message) and client-go does not
// fall back to JSON on 415. This decodes just that message into its JSON
// form: spec.audiences (1), spec.boundObjectRef (3: kind 1, apiVersion 2,
// name 3, uid 4) and spec.expirationSeconds (4). The answer goes out as JSON,
// which client-go accepts.
import { badRequest } from '../errors.ts';
import type { JsonObject } from '../../../src/kube/json-object.ts';

type Field = { no: number; bytes?: Buffer; int?: number };

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

function varint(buf: Buffer, at: number): [number, number] {
  let n = 0;
  let mul = 1;
  for (let i = at; i < buf.length && i < at + 10; i++) {
    const b = buf[i] as number;
    n += (b & 0x7f) * mul;
    mul *= 128;
    if ((b & 0x80) === 0) return [n, i + 1];
  }
  throw badRequest('malformed protobuf body: bad varint');
}

/** The fields of one protobuf message (varint and length-delimited only; others skipped). */
export function protoFields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  while (at < buf.length) {
    const [key, next] = varint(buf, at);
    at = next;
    const no = Math.floor(key / 8);
    switch (key & 7) {
      case 0: {
        const [v, n] = varint(buf, at);
        out.push({ no, int: v });
        at = n;
        break;
      }
      case 1:
        at += 8;
        break;
      case 2: {
        const [len, n] = varint(buf, at);
        if (n + len > buf.length) throw badRequest('malformed protobuf body: truncated field');
        out.push({ no, bytes: buf.subarray(n, n + len) });
        at = n + len;
        break;
      }
      case 5:
        at += 4;
        break;
      default:
        throw badRequest('malformed protobuf body: unsupported wire type');
    }
  }
  return out;
}

const str = (f: Field | undefined): string | undefined => f?.bytes?.toString('utf8');

/** A protobuf-encoded TokenRequest as its JSON form (spec only). */
export function tokenRequestFromProtobuf(body: Buffer): JsonObject {
  if (!body.subarray(0, 4).equals(MAGIC))
    throw badRequest('a protobuf body must start with the k8s magic');
  const raw = protoFields(body.subarray(4)).find((f) => f.no === 2)?.bytes;
  if (!raw) throw badRequest('the protobuf body holds no object');
  const specBytes = protoFields(raw).find((f) => f.no === 2)?.bytes;
  const spec: JsonObject = {};
  for (const f of specBytes ? protoFields(specBytes) : []) {
    if (f.no === 1 && f.bytes) ((spec.audiences ??= []) as string[]).push(str(f) as string);
    if (f.no === 4 && f.int !== undefined) spec.expirationSeconds = f.int;
    if (f.no === 3 && f.bytes) {
      const ref: JsonObject = {};
      const names = ['', 'kind', 'apiVersion', 'name', 'uid'];
      for (const r of protoFields(f.bytes)) {
        const k = names[r.no];
        if (k && r.bytes) ref[k] = str(r) as string;
      }
      spec.boundObjectRef = ref;
    }
  }
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec };
}
