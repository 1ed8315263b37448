// `--release-delay SECONDS|auto`, one parser for the sidecar and simulate: a
// number of seconds (0: exactly CNS v2) or `auto` (the adaptive policy). Pure
// and free of the policies themselves, so `--help` loads nothing that runs.

export type ReleaseDelay = { kind: 'fixed'; seconds: number } | { kind: 'auto' };

export class ReleaseDelayError extends Error {
  override readonly name = 'ReleaseDelayError';
}

export function parseReleaseDelay(text: string, flag = '--release-delay'): ReleaseDelay {
  const value = text.trim();
  if (value.toLowerCase() === 'auto') return { kind: 'auto' };
  const seconds = Number(value);
  if (value === '' || !Number.isFinite(seconds) || seconds < 0) {
    throw new ReleaseDelayError(
      `${flag} must be a number of seconds >= 0 or "auto", got "${text}"`,
    );
  }
  return { kind: 'fixed', seconds };
}

/** As the flag takes it: `auto`, `0`, `60`. */
export function formatReleaseDelay(delay: ReleaseDelay): string {
  return delay.kind === 'auto' ? 'auto' : String(delay.seconds);
}
