// A list and its pages: the selector (a name term read as one key), limit
// and continue tokens, and a token too old for the history answered 410.
import { ApiError, badRequest } from './errors.ts';
import type { KObject } from '../../src/kube/json-object.ts';
import { resourceKey, type ResourceInfo } from './resources.ts';
import type { Selector } from '../../src/kube/selectors.ts';
import type { ObjectStore } from './store.ts';

export interface ListOptions {
  selector: Selector;
  /** The selector's `metadata.name=X` term, if it has one: only the object named X can match. */
  name?: string;
  limit?: number;
  continueToken?: string;
}

export interface ListPage {
  items: KObject[];
  rv: number;
  continue?: string;
  remaining?: number;
}

export interface ContinueToken {
  rv: number;
  start: string;
}

export function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify(t)).toString('base64url');
}

export function decodeContinue(s: string): ContinueToken {
  try {
    const t = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as ContinueToken;
    if (typeof t.rv === 'number' && typeof t.start === 'string') return t;
  } catch {
    // fall through
  }
  throw badRequest(
    'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
  );
}

/** One page of a list: its items, at the store's resourceVersion, and the rest's continue token. */
export function listPage(
  store: ObjectStore,
  res: ResourceInfo,
  ns: string | undefined,
  opts: ListOptions,
): ListPage {
  const rv = store.currentRv();
  let start = '';
  if (opts.continueToken) {
    const t = decodeContinue(opts.continueToken);
    if (t.rv < store.oldestWatchableRv())
      throw new ApiError(
        410,
        'Expired',
        'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
      );
    start = t.start;
  }
  const scope = res.namespaced ? ns : undefined;
  // A name term narrows the list to one key, within one namespace or none,
  // as kube-apiserver's generic store does: ListPredicate turns a predicate
  // whose field selector requires metadata.name (SelectionPredicate.
  // MatchesSingle) into a read of that one key when the key can be made
  // (KeyFunc fails for a namespaced resource listed across namespaces,
  // which then lists). k8s.io/apiserver/pkg/registry/generic/registry/store.go.
  const byName = opts.name !== undefined && (!res.namespaced || ns) ? opts.name : undefined;
  const all = store.list(resourceKey(res), scope, opts.selector, byName);
  const items: KObject[] = [];
  let remaining = 0;
  let next: string | undefined;
  for (const obj of all) {
    const key = `${String(obj.metadata.namespace ?? '')}/${String(obj.metadata.name)}`;
    if (start && key <= start) continue;
    if (opts.limit && items.length >= opts.limit) {
      remaining++;
      continue;
    }
    items.push(obj);
    if (opts.limit && items.length === opts.limit) next = key;
  }
  const out: ListPage = {
    items,
    rv,
  };
  if (remaining > 0 && next !== undefined) {
    out.continue = encodeContinue({ rv, start: next });
    out.remaining = remaining;
  }
  return out;
}
