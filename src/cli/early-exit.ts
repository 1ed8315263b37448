// Loaded first (`node --import`, and main.ts's first import): SIGTERM/SIGINT
// exit 0 from the process's first JavaScript on (see signals.ts); before it
// there is only Node's native start, a few milliseconds.
import { installEarlyExit } from './signals.ts';

installEarlyExit();
// `ps` and `top` say what runs; from here on, a signal is handled (as above).
process.title = 'pool-monitor';
