// Parses an API path into what it addresses. Pure, so it is tested alone.
//   /api/v1[/watch][/namespaces/NS]/PLURAL[/NAME[/SUB]]
//   /apis/GROUP/VERSION[/watch][/namespaces/NS]/PLURAL[/NAME[/SUB]]

export type Route =
  | { kind: 'discovery-root'; which: 'api' | 'apis' }
  | { kind: 'discovery-group'; group: string }
  | { kind: 'discovery-version'; group: string; version: string }
  | {
      kind: 'resource';
      group: string;
      version: string;
      plural: string;
      namespace?: string;
      name?: string;
      subresource?: string;
      legacyWatch: boolean;
    }
  | { kind: 'other'; path: string };

export function parseApiPath(
  pathname: string,
  isResource: (group: string, version: string, plural: string) => boolean,
): Route {
  const seg = pathname
    .split('/')
    .filter((s) => s.length > 0)
    .map(decodeURIComponent);
  let group: string;
  let version: string | undefined;
  let rest: string[];
  if (seg[0] === 'api') {
    if (seg.length === 1) return { kind: 'discovery-root', which: 'api' };
    group = '';
    version = seg[1];
    rest = seg.slice(2);
  } else if (seg[0] === 'apis') {
    if (seg.length === 1) return { kind: 'discovery-root', which: 'apis' };
    group = seg[1] as string;
    if (seg.length === 2) return { kind: 'discovery-group', group };
    version = seg[2];
    rest = seg.slice(3);
  } else return { kind: 'other', path: pathname };
  const v = version as string;
  if (rest.length === 0) return { kind: 'discovery-version', group, version: v };
  let legacyWatch = false;
  if (rest[0] === 'watch') {
    legacyWatch = true;
    rest = rest.slice(1);
  }
  let namespace: string | undefined;
  // namespaces/NS/PLURAL... addresses objects in a namespace, unless PLURAL is
  // not a namespaced resource (namespaces/NAME/status is the namespace's own).
  if (rest[0] === 'namespaces' && rest.length >= 3 && isResource(group, v, rest[2] as string)) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length > 3 || rest.length === 0) return { kind: 'other', path: pathname };
  const route: Route = {
    kind: 'resource',
    group,
    version: v,
    plural: rest[0] as string,
    legacyWatch,
  };
  if (namespace !== undefined) route.namespace = namespace;
  if (rest[1] !== undefined) route.name = rest[1];
  if (rest[2] !== undefined) route.subresource = rest[2];
  return route;
}
