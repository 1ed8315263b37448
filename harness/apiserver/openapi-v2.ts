// A minimal OpenAPI v2 document in the protobuf form client-go downloads
// (gnostic openapi_v2.Document). Older kubectl (1.27) reads it to learn that
// every PATCH operation takes the `fieldValidation` query parameter; then it
// leaves validation to the server instead of failing on a missing schema.
// Only the fields that check needs are written: paths → patch operation →
// x-kubernetes-group-version-kind extension and the query parameter.
import type { ResourceCatalog } from './resources.ts';

type Field = [number, string | Buffer];

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** Encodes a message whose fields are all length-delimited (strings and sub-messages). */
export function message(fields: Field[]): Buffer {
  const parts: Buffer[] = [];
  for (const [num, value] of fields) {
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    parts.push(varint((num << 3) | 2), varint(bytes.length), bytes);
  }
  return Buffer.concat(parts);
}

function patchOperation(group: string, version: string, kind: string): Buffer {
  const queryParam = message([
    [2, 'query'],
    [4, 'fieldValidation'],
    [6, 'string'],
  ]);
  const parametersItem = message([[1, message([[2, message([[3, queryParam]])]])]]);
  const gvkYaml = `group: "${group}"\nkind: ${kind}\nversion: ${version}\n`;
  const extension = message([
    [1, 'x-kubernetes-group-version-kind'],
    [2, message([[2, gvkYaml]])],
  ]);
  return message([
    [5, `patch${kind}`],
    [8, parametersItem],
    [13, extension],
  ]);
}

export function openApiV2Protobuf(catalog: ResourceCatalog): Buffer {
  const paths: Field[] = [];
  for (const r of catalog.all()) {
    for (const v of r.versions) {
      const base = r.group ? `/apis/${r.group}/${v}` : `/api/${v}`;
      const path = `${base}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}/{name}`;
      const pathItem = message([[8, patchOperation(r.group, v, r.kind)]]);
      paths.push([
        2,
        message([
          [1, path],
          [2, pathItem],
        ]),
      ]);
    }
  }
  return message([
    [1, '2.0'],
    [
      2,
      message([
        [1, 'Kubernetes'],
        [2, 'v1.33.0'],
      ]),
    ],
    [8, message(paths)],
  ]);
}
