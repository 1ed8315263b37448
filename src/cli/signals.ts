// SIGTERM and SIGINT, the same way in every command. From the first moment of
// the process (early-exit.ts, loaded with `node --import` before anything
// else), a signal ends the process at once with status 0: nothing has started
// that needs a clean stop. As soon as a command listens for the signals
// itself (untilSignal), the early exit stands aside and the command shuts
// down cleanly, then exits 0.

/** Exits 0 on SIGTERM/SIGINT unless a command has its own handler for it. */
export function installEarlyExit(proc: NodeJS.Process = process): void {
  const early = (signal: NodeJS.Signals): void => {
    if (proc.listenerCount(signal) > 1) return; // a command handles it
    proc.exit(0);
  };
  proc.on('SIGTERM', early);
  proc.on('SIGINT', early);
}

/** Resolves at the first SIGTERM or SIGINT from now on. */
export function untilSignal(proc: NodeJS.Process = process): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals): void => {
      proc.off('SIGINT', on);
      proc.off('SIGTERM', on);
      resolve(signal);
    };
    proc.on('SIGINT', on);
    proc.on('SIGTERM', on);
  });
}

/** A listener that could not bind (EADDRINUSE, EACCES, EADDRNOTAVAIL): its error, naming the flag. */
export function listenError(flag: string, value: string | number, err: unknown): unknown {
  const e = err as { syscall?: string; message?: string };
  if (e?.syscall !== 'listen') return err;
  return new Error(`${flag} ${value}: ${e.message ?? String(err)}`);
}
