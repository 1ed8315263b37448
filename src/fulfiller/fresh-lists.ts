// A new leader's fresh lists against what its watches cached (README "High availability"):
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
