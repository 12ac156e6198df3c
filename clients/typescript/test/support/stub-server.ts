/**
 * A stand-in QueueService on grpc-js, for what the real server cannot be made to do on demand:
 * fail with a chosen status (with metadata, such as a cluster follower's `sepp-leader`), answer
 * with malformed data, or never answer. The Consume stream can only end with a status, or hang. It records every call (method, request, metadata, deadline)
 * so tests can check what the client put on the wire.
 */
import { EventEmitter, once } from "node:events";
import * as grpc from "@grpc/grpc-js";
import { QueueServiceService } from "../../src/gen/sepp/v1/queue.js";

type Methods = typeof QueueServiceService;
export type MethodName = keyof Methods;

/**
 * What a stub method does with one call: answer, fail with a status (and metadata), or hang until
 * the call ends.
 */
export type StubAnswer =
  | { response: unknown }
  | { code: grpc.status; details?: string; metadata?: Record<string, string> }
  | "hang";

/** The answer of a cluster follower that knows the leader is at `leader` (`host:port`). */
export function redirectTo(leader: string): StubAnswer {
  return {
    code: grpc.status.UNAVAILABLE,
    details: `this node is not the cluster's leader; the leader is at ${leader}`,
    metadata: { "sepp-leader": leader },
  };
}

export interface RecordedCall {
  method: MethodName;
  request: unknown;
  metadata: grpc.Metadata;
  deadline: grpc.Deadline;
  /** Resolves when the client cancels the call. */
  cancelled: Promise<void>;
}

export class StubServer {
  private constructor(
    private readonly server: grpc.Server,
    readonly port: number,
    /** Every call received, in order. */
    readonly calls: RecordedCall[],
    private readonly events: EventEmitter,
  ) {}

  get addr(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Starts a stub whose methods answer as `answers` says (UNIMPLEMENTED otherwise). */
  static async start(
    answers: Partial<Record<MethodName, (request: unknown) => StubAnswer>>,
  ): Promise<StubServer> {
    const server = new grpc.Server();
    const calls: RecordedCall[] = [];
    const events = new EventEmitter();
    const implementation: grpc.UntypedServiceImplementation = {};
    for (const name of Object.keys(QueueServiceService) as MethodName[]) {
      if (QueueServiceService[name].requestStream) {
        // A stream (Consume): it records its opening and ends with the answer's status, or hangs.
        implementation[name] = (call: grpc.ServerDuplexStream<unknown, unknown>) => {
          calls.push({
            method: name,
            request: undefined,
            metadata: call.metadata,
            deadline: call.getDeadline(),
            cancelled: new Promise((resolve) => call.once("cancelled", () => resolve())),
          });
          events.emit("call");
          call.on("data", () => {});
          const answer = answers[name]?.(undefined) ?? { code: grpc.status.UNIMPLEMENTED, details: "stub" };
          if (answer === "hang" || "response" in answer) return;
          const metadata = new grpc.Metadata();
          for (const [key, value] of Object.entries(answer.metadata ?? {})) metadata.set(key, value);
          call.emit("error", { code: answer.code, details: answer.details ?? "stub failure", metadata });
        };
        continue;
      }
      implementation[name] = (
        call: grpc.ServerUnaryCall<unknown, unknown>,
        callback: grpc.sendUnaryData<unknown>,
      ) => {
        calls.push({
          method: name,
          request: call.request,
          metadata: call.metadata,
          deadline: call.getDeadline(),
          cancelled: new Promise((resolve) => call.once("cancelled", () => resolve())),
        });
        events.emit("call");
        const answer = answers[name]?.(call.request) ?? { code: grpc.status.UNIMPLEMENTED, details: "stub" };
        if (answer === "hang") return;
        if ("response" in answer) {
          callback(null, answer.response);
          return;
        }
        const metadata = new grpc.Metadata();
        for (const [key, value] of Object.entries(answer.metadata ?? {})) metadata.set(key, value);
        callback({
          code: answer.code,
          details: answer.details ?? "stub failure",
          metadata,
          name: "",
          message: "",
        });
      };
    }
    server.addService(QueueServiceService as unknown as grpc.ServiceDefinition, implementation);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    return new StubServer(server, port, calls, events);
  }

  /** Resolves once `count` calls of `method` have arrived. */
  async waitForCalls(method: MethodName, count = 1): Promise<void> {
    while (this.callsOf(method).length < count) await once(this.events, "call");
  }

  /** The recorded calls of one method. */
  callsOf(method: MethodName): RecordedCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  stop(): void {
    this.server.forceShutdown();
  }

  /**
   * Stops like a node going away: no new calls, and resolves once every connection is closed, so
   * a client's next call to this address is refused.
   */
  stopGracefully(): Promise<void> {
    return new Promise((resolve, reject) =>
      this.server.tryShutdown((error) => (error ? reject(error) : resolve())),
    );
  }
}
