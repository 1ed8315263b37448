// `--idle-budget RATIO`, one parser for the sidecar and simulate. Free of the
// policies themselves, so `--help` and option checks load nothing that runs.

/** The default budget: 1.5 x the idle IP-seconds CNS v2 would hold. */
export const DEFAULT_IDLE_BUDGET = 1.5;

export class IdleBudgetError extends Error {
  override readonly name = 'IdleBudgetError';
}

/** A finite number >= 1 (1: no more idle IPs than CNS v2). */
export function parseIdleBudget(text: string, flag = '--idle-budget'): number {
  const value = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(value) || value < 1) {
    throw new IdleBudgetError(
      `${flag} must be a number >= 1 (idle IP-seconds as a multiple of what CNS v2 would hold), got "${text}"`,
    );
  }
  return value;
}
