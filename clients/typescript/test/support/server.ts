/**
 * The integration harness: starts the real `sepp` binary (`$SEPP_BIN`) on port 0 with a temporary
 * data directory, learns its addresses from the ready file it writes once its listeners are bound
 * (`--ready-file`), and stops it. Nothing here sleeps to wait: it polls for that file (failing at
 * once if the server exits first), `waitForLog` waits for log lines, and `waitParked` for the
 * server's count of parked reserves.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

/** How long a server may take to write its ready file. */
const START_TIMEOUT_MS = 30_000;

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
  /** `RUST_LOG` of the server (default `sepp=info`). */
  rustLog?: string;
}

/** `tail` configuration that turns on the Prometheus endpoint, on a free port (see `requestCount`
 * and `waitParked`). */
export const PROMETHEUS = '[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = "127.0.0.1:0"\n';

export class TestServer {
  readonly logs: string[] = [];
  readonly #waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly dir: string,
    /** `127.0.0.1:<port>` of the Prometheus endpoint, when it is on. */
    readonly prometheusAddr: string | undefined,
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
    const readyFile = join(dir, "sepp.ready.json");
    const child = spawn(serverBinary(), ["--config", config, "--ready-file", readyFile], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines: string[] = [];
    let server: TestServer | undefined;
    const onLine = (raw: string) => {
      const line = raw.replace(ANSI, "");
      if (server) server.onLine(line);
      else lines.push(line);
    };
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", onLine);
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", onLine);
    let failed: Error | undefined;
    child.once("error", (error) => {
      failed = error;
    });
    child.once("exit", (code) => {
      failed ??= new Error(`sepp exited with ${code} before listening:\n${lines.join("\n")}`);
    });
    // The file is renamed into place whole: once it exists, it can be read.
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!existsSync(readyFile)) {
      if (failed) throw failed;
      if (Date.now() >= deadline) {
        child.kill("SIGKILL");
        throw new Error(`sepp wrote no ready file:\n${lines.join("\n")}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const ready = JSON.parse(readFileSync(readyFile, "utf8")) as {
      queue_addr: string;
      prometheus_addr: string | null;
    };
    const port = Number(ready.queue_addr.slice(ready.queue_addr.lastIndexOf(":") + 1));
    const prometheus = ready.prometheus_addr ?? undefined;
    server = new TestServer(
      child,
      port,
      dir,
      prometheus && `127.0.0.1:${prometheus.slice(prometheus.lastIndexOf(":") + 1)}`,
    );
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
    const text = await this.scrape();
    let total = 0;
    for (const row of text.split("\n")) {
      const match = /^sepp_requests_total\{([^}]*)\} (\d+)/.exec(row);
      if (match?.[1]?.includes(`method="${method}"`)) total += Number(match[2]);
    }
    return total;
  }

  /** The Prometheus endpoint's exposition; the server must have been started with {@link PROMETHEUS}. */
  async scrape(): Promise<string> {
    if (this.prometheusAddr === undefined) throw new Error("the server runs without PROMETHEUS");
    return await (await fetch(`http://${this.prometheusAddr}/metrics`)).text();
  }

  /** The server's `sepp_reserve_waiting` gauge: reserves waiting for a job now. */
  async reservesWaiting(): Promise<number> {
    const text = await this.scrape();
    const match = /^sepp_reserve_waiting(?:\{[^}]*\})? (\S+)$/m.exec(text);
    if (!match) throw new Error(`no sepp_reserve_waiting in the scrape:\n${text}`);
    return Number(match[1]);
  }

  /**
   * Resolves once `count` reserves wait for a job at once: the server has each of them, so it
   * parks them before any call made after this resolves. Polls the gauge; rejects after 10 s.
   */
  async waitParked(count: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await this.reservesWaiting()) < count) {
      if (Date.now() >= deadline) throw new Error(`no ${count} reserves waiting within 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
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
