// Component logs of an embedded run go to one JSON-lines file in the run
// directory: with many nodes they are far too noisy for the terminal, which
// stays free for the progress bar and the report. Writes after close() are
// dropped instead of crashing (a late Event or watch log during shutdown).
import { createWriteStream, type WriteStream } from 'node:fs';
import TransportStream from 'winston-transport';
import { createLogger, type LogLevel, type Logger } from '../../src/log/logger.ts';

/** winston's formatted line (triple-beam's MESSAGE symbol). */
const MESSAGE = Symbol.for('message');

export class FileLineTransport extends TransportStream {
  private readonly out: WriteStream;
  private fileClosed = false;

  constructor(path: string) {
    super();
    this.out = createWriteStream(path, { flags: 'a' });
  }

  override log(info: Record<string | symbol, unknown>, next: () => void): void {
    if (!this.fileClosed) this.out.write(`${String(info[MESSAGE])}\n`);
    next();
  }

  /** Flushes and closes the file; later records are dropped. */
  closeFile(): Promise<void> {
    if (this.fileClosed) return Promise.resolve();
    this.fileClosed = true;
    return new Promise((resolve) => this.out.end(() => resolve()));
  }
}

/** A root logger writing JSON lines to `path`, and a function that closes it. */
export function fileLogger(
  path: string,
  level: LogLevel,
): { logger: Logger; close: () => Promise<void> } {
  const transport = new FileLineTransport(path);
  const logger = createLogger({ level, transports: [transport] });
  return { logger, close: () => transport.closeFile() };
}
