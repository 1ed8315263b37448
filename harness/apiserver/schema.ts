// Structural-schema validation and pruning for custom resources, the subset
// of OpenAPI v3 that CRDs use: type, properties, items, required, enum,
// nullable, x-kubernetes-preserve-unknown-fields, additionalProperties,
// minimum/maximum, minLength/maxLength/pattern. Unknown fields are pruned, as
// the real server does; type mismatches are 422 causes.
import type { StatusCause } from './errors.ts';
import { isObject, type Json, type JsonObject } from '../../src/kube/json-object.ts';

function typeOf(v: Json): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Validates `value` in place, pruning unknown fields; returns the causes of failure. */
export function validateAndPrune(
  value: Json,
  schema: JsonObject,
  path: string,
  causes: StatusCause[],
  pruned: string[] = [],
): void {
  const t = schema.type;
  const actual = typeOf(value);
  if (value === null) {
    if (schema.nullable !== true && t !== undefined)
      causes.push({
        reason: 'FieldValueTypeInvalid',
        field: path,
        message: `Invalid value: "null": ${path} in body must be of type ${String(t)}: "null"`,
      });
    return;
  }
  if (typeof t === 'string' && t !== actual && !(t === 'number' && actual === 'integer')) {
    causes.push({
      reason: 'FieldValueTypeInvalid',
      field: path,
      message: `Invalid value: "${actual}": ${path} in body must be of type ${t}: "${actual}"`,
    });
    return;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === value)) {
    causes.push({
      reason: 'FieldValueNotSupported',
      field: path,
      message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`,
    });
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum)
      causes.push({
        reason: 'FieldValueInvalid',
        field: path,
        message: `Invalid value: ${value}: ${path} in body should be greater than or equal to ${schema.minimum}`,
      });
    if (typeof schema.maximum === 'number' && value > schema.maximum)
      causes.push({
        reason: 'FieldValueInvalid',
        field: path,
        message: `Invalid value: ${value}: ${path} in body should be less than or equal to ${schema.maximum}`,
      });
  }
  if (typeof value === 'string') {
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength)
      causes.push({
        reason: 'FieldValueTooLong',
        field: path,
        message: `Too long: may not be longer than ${schema.maxLength}`,
      });
    if (typeof schema.minLength === 'number' && value.length < schema.minLength)
      causes.push({
        reason: 'FieldValueInvalid',
        field: path,
        message: `Invalid value: "${value}": ${path} in body should be at least ${schema.minLength} chars long`,
      });
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern).test(value))
      causes.push({
        reason: 'FieldValueInvalid',
        field: path,
        message: `Invalid value: "${value}": ${path} in body should match '${schema.pattern}'`,
      });
  }
  if (Array.isArray(value)) {
    const items = schema.items;
    if (isObject(items))
      value.forEach((v, i) => validateAndPrune(v, items, `${path}[${i}]`, causes, pruned));
    return;
  }
  if (isObject(value)) {
    const props = isObject(schema.properties) ? schema.properties : undefined;
    const additional = schema.additionalProperties;
    const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
    if (Array.isArray(schema.required)) {
      for (const r of schema.required)
        if (typeof r === 'string' && value[r] === undefined)
          causes.push({
            reason: 'FieldValueRequired',
            field: `${path}.${r}`,
            message: 'Required value',
          });
    }
    for (const [k, v] of Object.entries(value)) {
      const childPath = path ? `${path}.${k}` : k;
      const sub = props?.[k];
      if (isObject(sub)) validateAndPrune(v, sub, childPath, causes, pruned);
      else if (isObject(additional)) validateAndPrune(v, additional, childPath, causes, pruned);
      else if (!preserve && additional !== true && (props || schema.type === 'object')) {
        delete value[k];
        pruned.push(childPath);
      }
    }
  }
}

/** Validates a custom resource against its CRD schema (metadata is checked elsewhere). */
export function validateCustomResource(
  obj: JsonObject,
  schema: JsonObject,
  pruned: string[] = [],
): StatusCause[] {
  const causes: StatusCause[] = [];
  const props = isObject(schema.properties) ? schema.properties : {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'metadata') continue;
    const sub = props[k];
    if (isObject(sub)) validateAndPrune(v, sub, k, causes, pruned);
    else if (schema['x-kubernetes-preserve-unknown-fields'] !== true) {
      delete obj[k];
      pruned.push(k);
    }
  }
  if (Array.isArray(schema.required)) {
    for (const r of schema.required)
      if (typeof r === 'string' && r !== 'metadata' && obj[r] === undefined)
        causes.push({ reason: 'FieldValueRequired', field: r, message: 'Required value' });
  }
  return causes;
}
