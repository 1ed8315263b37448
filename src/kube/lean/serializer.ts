// What @kubernetes/client-node's cache.js (ListWatch) takes from its
// serializer.js, and nothing else: serializer.js loads the generated
// ObjectSerializer and every model (about 950 modules), while ListWatch only
// passes its label and field selectors through it, strings the package's
// serializer returns as they are. hooks.ts points cache.js here in the node
// agent (docs/decisions/0026); any other use fails loudly rather than
// sending something the package would have converted.
export const ObjectSerializer = {
  serialize(data: unknown, type: string): unknown {
    if (type !== 'string' || (data !== undefined && typeof data !== 'string')) {
      throw new Error(
        `the node agent's lean client serializes strings only, not ${type} (src/kube/lean/serializer.ts)`,
      );
    }
    return data;
  },
};
