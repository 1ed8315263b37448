// The JSON the server writes for stored objects: each object's JSON written
// out once for the answer to the write that made it and every watch event
// that carries it (objects are never changed once stored, so their JSON
// never goes stale).
import type { KObject } from '../../src/kube/json-object.ts';

export class ObjectJson {
  private readonly objects = new WeakMap<KObject, string>();
  private readonly eventLines = new WeakMap<KObject, Map<string, string>>();

  /** The object's JSON, written once. */
  of(obj: KObject): string {
    let text = this.objects.get(obj);
    if (text === undefined) {
      text = JSON.stringify(obj);
      this.objects.set(obj, text);
    }
    return text;
  }

  /** JSON.stringify({ type, object }), with the object's JSON written once. */
  event(type: string, obj: KObject): string {
    let m = this.eventLines.get(obj);
    if (!m) {
      m = new Map();
      this.eventLines.set(obj, m);
    }
    let line = m.get(type);
    if (line === undefined) {
      line = `{"type":${JSON.stringify(type)},"object":${this.of(obj)}}`;
      m.set(type, line);
    }
    return line;
  }
}
