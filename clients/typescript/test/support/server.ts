/**
 * The integration harness: starts the real `sepp` binary (`$SEPP_BIN`) on port 0 with a temporary
 * data directory, learns the port from its `queue server listening` line, and stops it. Nothing
 * here sleeps: it waits for that line, and `waitForLog` waits for later ones.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

// biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character starts every colour code.
const ANSI = /\x1b\[[0-9;]*m/g;

/** The server binary under test; the suites refuse to run without it. */
export function serverBinary(): string {
  const bin = process.env.SEPP_BIN;
  if (!bin) throw new Error("SEPP_BIN is not set: point it at the sepp server binary to test");
  return bin;
}

export interface ServerOptions {
  /** Lines added to `[server]` (e.g. TLS paths, `strict_queues = true`). */
  serverExtra?: string;
  /** More configuration after the defaults (`[auth]`, `[[queues]]`, `[limits]`, ...). */
  tail?: string;
  /** `[storage]` lines replacing the defaults (buffered writes, dead letters kept for a day). */
  storage?: string;
  /** `RUST_LOG` of the server (default `sepp=info`); {@link PARKING_LOG} logs each parked reserve. */
  rustLog?: string;
}

/** `RUST_LOG` for a server whose tests wait for a reserve to park: the committer's debug line
 * `reserve parked` is the signal. */
export const PARKING_LOG = "sepp=info,sepp_server::committer=debug";

/** `tail` configuration that turns on the Prometheus endpoint, on a free port (see `requestCount`). */
export const PROMETHEUS = '[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = "127.0.0.1:0"\n';

export class TestServer {
  readonly logs: string[] = [];
  readonly #waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly dir: string,
  ) {}

  /** `127.0.0.1:<port>`. */
  get addr(): string {
    return `127.0.0.1:${this.port}`;
  }

  static async start(options: ServerOptions = {}): Promise<TestServer> {
    const dir = mkdtempSync(join(tmpdir(), "sepp-js-test-"));
    const config = join(dir, "sepp.toml");
    const storage =
      options.storage ??
      'persist_mode = "buffer"\ndead_letter_retention_ms = 86400000\nsweep_interval_ms = 50';
    writeFileSync(
      config,
      `[server]\nlisten_addr = "127.0.0.1:0"\ndb_path = ${JSON.stringify(join(dir, "data"))}\n${options.serverExtra ?? ""}\n\n` +
        `[admin]\nenabled = false\n\n[storage]\n${storage}\n\n${options.tail ?? ""}\n`,
    );
    const env: NodeJS.ProcessEnv = { ...process.env, RUST_LOG: options.rustLog ?? "sepp=info" };
    for (const name of Object.keys(env)) if (name.toUpperCase().startsWith("SEPP_")) delete env[name];
    const child = spawn(serverBinary(), ["--config", config], { env, stdio: ["ignore", "pipe", "pipe"] });
    const lines: string[] = [];
    let server: TestServer | undefined;
    const port = await new Promise<number>((resolve, reject) => {
      const onLine = (raw: string) => {
        const line = raw.replace(ANSI, "");
        if (server) server.onLine(line);
        else lines.push(line);
        if (line.includes("queue server listening")) {
          const match = /127\.0\.0\.1:(\d+)/.exec(line);
          if (match) resolve(Number(match[1]));
        }
      };
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", onLine);
      createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", onLine);
      child.once("error", reject);
      child.once("exit", (code) =>
        reject(new Error(`sepp exited with ${code} before listening:\n${lines.join("\n")}`)),
      );
    });
    server = new TestServer(child, port, dir);
    server.logs.push(...lines);
    return server;
  }

  private onLine(line: string): void {
    this.logs.push(line);
    for (const waiter of [...this.#waiters]) {
      if (waiter.pattern.test(line)) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  }

  /** Resolves with the first log line (already printed or still to come) that matches. */
  waitForLog(pattern: RegExp): Promise<string> {
    const seen = this.logs.find((line) => pattern.test(line));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => this.#waiters.push({ pattern, resolve }));
  }

  /** Resolves once `count` log lines (already printed or still to come) match. */
  async waitForLogCount(pattern: RegExp, count: number): Promise<void> {
    // Recounted after each wake-up: lines read in one chunk may pass a waiter not yet re-added.
    while (this.logs.filter((line) => pattern.test(line)).length < count) {
      await new Promise<string>((resolve) => this.#waiters.push({ pattern, resolve }));
    }
  }

  /**
   * The server's count of QueueService calls of `method` (`sepp.requests`, ok and error together),
   * read from its Prometheus endpoint; the server must have been started with {@link PROMETHEUS}.
   */
  async requestCount(method: string): Promise<number> {
    const line = await this.waitForLog(/prometheus metrics endpoint listening/);
    const addr = /addr=(\S+)/.exec(line)?.[1];
    if (addr === undefined) throw new Error(`no address in: ${line}`);
    const text = await (await fetch(`http://${addr}/metrics`)).text();
    let total = 0;
    for (const row of text.split("\n")) {
      const match = /^sepp_requests_total\{([^}]*)\} (\d+)/.exec(row);
      if (match?.[1]?.includes(`method="${method}"`)) total += Number(match[2]);
    }
    return total;
  }

  /** Stops the server and removes its data directory. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGKILL");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
