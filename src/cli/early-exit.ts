// Loaded first (`node --import`, and main.ts's first import): SIGTERM/SIGINT
// exit 0 from the process's first moment (see signals.ts).
import { installEarlyExit } from './signals.ts';

installEarlyExit();
