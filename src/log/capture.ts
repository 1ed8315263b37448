// A winston transport that keeps records in memory, so tests and the simulate
// command can read what a component logged.
import Transport from 'winston-transport';

export interface LogRecord {
  level: string;
  msg: string;
  component?: string;
  [field: string]: unknown;
}

export class CaptureTransport extends Transport {
  readonly records: LogRecord[] = [];

  override log(info: Record<string | symbol, unknown>, next: () => void): void {
    const { message, ...rest } = info as Record<string, unknown>;
    this.records.push({ ...rest, msg: String(message), level: String(info.level) } as LogRecord);
    next();
  }

  /** Records whose message equals `msg`. */
  find(msg: string): LogRecord[] {
    return this.records.filter((r) => r.msg === msg);
  }
}
