// The product's processes under the chaos harness: each sidecar and each
// fulfiller replica runs as `bin/pool-monitor sidecar|fulfiller`, a real
// process, so that a kill is kill -9 (SIGKILL) and nothing is flushed that a
// crash would not flush (docs/decisions/0020). Its stdout and stderr go
// straight into the run's component log (an O_APPEND file, one line per
// write), so a killed process leaves exactly the lines it wrote.
//
// A component listens on a port the harness picks once (so its URL stays
// the same across restarts, as a pod's would); should another process take
// that port while it is down, it gets a new one and `url` follows.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../../bin/pool-monitor', import.meta.url));

/** A free TCP port on 127.0.0.1 (free now; the caller binds it soon after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export interface ComponentProcessOptions {
  /** sidecar-node-0, fulfiller-1, ... */
  name: string;
  /** The command line after bin/pool-monitor, for a given listen port. */
  args(port: number): string[];
  env?: NodeJS.ProcessEnv;
  /** Component log: stdout and stderr are appended to it. */
  logFile: string;
  /** Polled after start until true: the component is up. */
  ready(url: string): Promise<boolean>;
  /** How long start() waits for ready (default 30 s). */
  startTimeoutMs?: number;
  /** Told when the process exits, with how (not called for kill()/stop()). */
  onUnexpectedExit?: (how: string) => void;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class ComponentProcess {
  readonly name: string;
  /** Times it was killed with SIGKILL and started again. */
  restarts = 0;
  /** Exits nobody asked for (a crash of the product). */
  readonly crashes: string[] = [];
  private readonly o: ComponentProcessOptions;
  private child: ChildProcess | undefined;
  private exited: Promise<string> | undefined;
  private port = 0;
  private expectExit = false;
  /** start() is waiting for it: an exit now is start()'s to handle. */
  private starting = false;

  constructor(options: ComponentProcessOptions) {
    this.name = options.name;
    this.o = options;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts the process and waits until it is ready; a process that exits first is started again on a new port. */
  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    this.starting = true;
    try {
      await this.startOnce();
    } finally {
      this.starting = false;
    }
  }

  private async startOnce(): Promise<void> {
    const deadline = Date.now() + (this.o.startTimeoutMs ?? 30_000);
    for (let attempt = 0; ; attempt += 1) {
      const how = this.spawnOnce();
      for (;;) {
        const done = await Promise.race([how, sleep(50).then(() => undefined)]);
        if (done !== undefined) break;
        if (await this.o.ready(this.url).catch(() => false)) return;
        if (Date.now() > deadline) throw new Error(`${this.name} not ready after start`);
      }
      // It exited before it was ready: most likely its port was taken meanwhile.
      const exitedHow = await how;
      if (attempt >= 3 || Date.now() > deadline)
        throw new Error(`${this.name} exited during start (${exitedHow})`);
      this.port = await freePort();
    }
  }

  private spawnOnce(): Promise<string> {
    const fd = openSync(this.o.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(BIN, this.o.args(this.port), {
        stdio: ['ignore', fd, fd],
        env: { ...process.env, ...this.o.env },
      });
    } finally {
      closeSync(fd); // the child has its own copy
    }
    this.child = child;
    this.expectExit = false;
    this.exited = new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => {
        const how = signal ?? `exit ${code}`;
        if (this.child === child) this.child = undefined;
        if (!this.expectExit && !this.starting) {
          this.crashes.push(how);
          this.o.onUnexpectedExit?.(how);
        }
        resolve(how);
      });
      child.once('error', (err) => resolve(`spawn failed: ${err.message}`));
    });
    return this.exited;
  }

  /** kill -9: no handler runs, nothing is flushed. Resolves once it is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.expectExit = true;
    child.kill('SIGKILL');
    await this.exited;
  }

  /** kill -9, then start again after `downMs`. */
  async crashAndRestart(downMs: number): Promise<void> {
    await this.kill();
    await sleep(downMs);
    this.restarts += 1;
    await this.start();
  }

  /** SIGTERM (a clean shutdown, exit 0 expected); SIGKILL after `graceMs`. Resolves with how it ended. */
  async stop(graceMs = 10_000): Promise<string> {
    const child = this.child;
    if (!child) return 'not running';
    this.expectExit = true;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    const how = (await this.exited) ?? 'exited';
    clearTimeout(timer);
    return how;
  }
}
