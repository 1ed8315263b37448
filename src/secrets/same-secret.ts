// Comparing a presented token with a known one without leaking, through the
// time the comparison takes, how much of it matched: both are hashed to
// equal-length SHA-256 digests and compared with crypto.timingSafeEqual
// (which needs equal lengths; the digests hide the tokens' lengths too).
import { hash, timingSafeEqual } from 'node:crypto';

/** One-shot: no Hash object a call (an API server digests every request's token). */
export const digest = (s: string): Buffer => hash('sha256', s, 'buffer');

export function sameSecret(presented: string, known: string): boolean {
  return sameDigest(digest(presented), digest(known)) && known !== '';
}

/** The same, for digests already made (a server hashes its known secret once, each presented one once). */
export const sameDigest = (presented: Buffer, known: Buffer): boolean =>
  timingSafeEqual(presented, known);
