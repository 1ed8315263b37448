// The pods/binding subresource, as kube-scheduler uses it: POST a Binding
// `{target: {kind: Node, name}}` to .../pods/NAME/binding binds an unscheduled
// pod to a node. As upstream, a pod that is already bound (to any node) is a
// 409 Conflict, and the Binding's name must be the pod's. Pure helpers; the
// server does the read and the write.
import { badRequest, conflict } from './errors.ts';
import { isObject, type Json, type KObject } from '../../src/kube/json-object.ts';

/** The node a Binding body names; a bad body is a 400. */
export function bindingTarget(body: Json, podName: string): string {
  if (!isObject(body)) throw badRequest('a Binding object is required');
  const meta = isObject(body.metadata) ? body.metadata : {};
  if (meta.name !== undefined && meta.name !== podName) {
    throw badRequest(`the Binding's name "${String(meta.name)}" is not the pod's ("${podName}")`);
  }
  const target = isObject(body.target) ? body.target : undefined;
  const kind = target?.kind ?? 'Node';
  const name = target?.name;
  if (kind !== 'Node' || typeof name !== 'string' || name === '') {
    throw badRequest('a Binding needs target.kind "Node" and a target.name');
  }
  return name;
}

/** The pod bound to `node`; a pod already bound is a 409, as upstream. */
export function boundPod(pod: KObject, node: string): KObject {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const current = spec.nodeName;
  if (typeof current === 'string' && current !== '') {
    throw conflict(
      '',
      'pods',
      String(pod.metadata.name),
      `pod ${String(pod.metadata.name)} is already assigned to node "${current}"`,
    );
  }
  return { ...pod, spec: { ...spec, nodeName: node } };
}
