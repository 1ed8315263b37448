// A new leader's fresh lists against what its watches cached (docs/design/fulfiller.md#high-availability):
// what a list leaves out was deleted before the list was read, unless the
// cache knows a version newer than the list (created or changed after it).
import { isNewer, rvNumber } from './ledger.ts';

/**
 * Names known (with the newest resourceVersion read of each) that a list read
 * at `listRv` proves deleted: absent from it, and last read at an older version.
 */
export function vanished(
  known: Iterable<[string, bigint | undefined]>,
  listed: ReadonlySet<string>,
  listRv: string | undefined,
): string[] {
  const at = rvNumber(listRv);
  if (at === undefined) return [];
  const out: string[] = [];
  for (const [name, rv] of known)
    if (!listed.has(name) && rv !== undefined && isNewer(at, rv)) out.push(name);
  return out;
}

/**
 * The newest resourceVersion among a watch's full list: stands for the
 * list's own version where only the items are at hand (a watch's re-list).
 */
export function newestVersion(
  items: Iterable<{ metadata?: { resourceVersion?: string } }>,
): string | undefined {
  let newest: bigint | undefined;
  for (const o of items) {
    const rv = rvNumber(o?.metadata?.resourceVersion);
    if (rv !== undefined && (newest === undefined || rv > newest)) newest = rv;
  }
  return newest === undefined ? undefined : String(newest);
}
