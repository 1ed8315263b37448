// The policy a `--release-delay` value stands for.
import type { ReleaseDelay } from '../../cli/release-delay.ts';
import { autoPolicy } from './auto/auto.ts';
import { fixedDelayPolicy } from './fixed-delay.ts';
import type { AnyPolicy } from './policy.ts';

export function releasePolicy(delay: ReleaseDelay): AnyPolicy {
  return delay.kind === 'auto' ? autoPolicy() : fixedDelayPolicy(delay.seconds * 1000);
}
