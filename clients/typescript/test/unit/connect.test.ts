/** Address parsing, the API key header, channel options, payloads, and the version. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { authorizationHeader, channelOptions, parseAddress } from "../../src/connect.js";
import { ConnectError, InvalidApiKeyError } from "../../src/errors.js";
import { Payload, Priority } from "../../src/payload.js";
import { formatTraceparent, parseTraceparent, traceparentProblem } from "../../src/trace.js";
import { USER_AGENT, VERSION } from "../../src/version.js";

describe("addresses", () => {
  test("host:port, http:// and https:// are accepted; https:// or a TLS option means TLS", () => {
    assert.deepEqual(parseAddress("127.0.0.1:50051", false), { target: "127.0.0.1:50051", tls: false });
    assert.deepEqual(parseAddress("http://h:1/", false), { target: "h:1", tls: false });
    assert.deepEqual(parseAddress("HTTPS://h:1", false), { target: "h:1", tls: true });
    assert.deepEqual(parseAddress("h:1", true), { target: "h:1", tls: true });
    assert.deepEqual(parseAddress("[::1]:5", false), { target: "[::1]:5", tls: false });
  });

  test("unusable addresses fail with a ConnectError", () => {
    for (const [addr, reason] of [
      ["", /empty/],
      ["http://", /empty/],
      ["grpc://h:1", /only http:\/\/ and https:\/\//],
      ["h:1/path", /without a path/],
    ] as const) {
      assert.throws(
        () => parseAddress(addr, false),
        (error: unknown) => {
          assert.ok(error instanceof ConnectError);
          assert.equal(error.addr, addr);
          assert.match(error.reason, reason);
          return true;
        },
      );
    }
  });
});

describe("connection settings", () => {
  test("the API key becomes a Bearer header; keys that cannot be header values are refused", () => {
    assert.equal(authorizationHeader("k-1"), "Bearer k-1");
    for (const key of ["", "  ", "line\nbreak", "tab\tkey", "ключ"]) {
      assert.throws(() => authorizationHeader(key), InvalidApiKeyError, JSON.stringify(key));
    }
  });

  test("keepalive, the user agent, the message limit and the TLS name override", () => {
    const options = channelOptions({ maxReceiveMessageBytes: 1024, tlsDomain: "sepp.internal" });
    assert.equal(options["grpc.keepalive_time_ms"], 30_000);
    assert.equal(options["grpc.keepalive_timeout_ms"], 10_000);
    assert.equal(options["grpc.keepalive_permit_without_calls"], 1);
    assert.equal(options["grpc.primary_user_agent"], `sepp-js/${VERSION}`);
    assert.equal(options["grpc.max_receive_message_length"], 1024);
    assert.equal(options["grpc.ssl_target_name_override"], "sepp.internal");
    assert.equal(channelOptions({})["grpc.max_receive_message_length"], undefined); // grpc-js's default
    assert.throws(() => channelOptions({ maxReceiveMessageBytes: 0 }), /maxReceiveMessageBytes/);
  });

  test("the version matches package.json", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    assert.equal(VERSION, pkg.version);
    assert.equal(USER_AGENT, `sepp-js/${pkg.version}`);
  });
});

describe("payloads and priorities", () => {
  test("the factories set the data and the encoding", () => {
    const json = Payload.json({ user: 42 });
    assert.deepEqual(
      [json.encoding, json.text(), json.json()],
      ["application/json", '{"user":42}', { user: 42 }],
    );
    assert.equal(json.data.length, 11);
    const text = Payload.text("grüße");
    assert.deepEqual([text.encoding, text.text()], ["text/plain", "grüße"]);
    assert.equal(Payload.text("x", "text/csv").encoding, "text/csv");
    const bytes = Payload.bytes(new Uint8Array([0, 255]));
    assert.deepEqual([bytes.encoding, [...bytes.data]], ["application/octet-stream", [0, 255]]);
    assert.equal(Payload.bytes(Buffer.from("x"), "x/y").encoding, "x/y");
    assert.throws(() => Payload.text("{").json(), SyntaxError);
  });

  test("priorities are 0 to 9", () => {
    assert.equal(Priority.P0, 0);
    assert.equal(Priority.P7, 7);
    assert.equal(Priority.P9, 9);
  });
});

describe("traceparents", () => {
  test("valid and invalid traceparents", () => {
    const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    assert.equal(traceparentProblem(valid), undefined);
    assert.equal(traceparentProblem(valid.toUpperCase()), undefined);
    assert.deepEqual(parseTraceparent(valid.toUpperCase()), {
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      flags: 1,
    });
    assert.equal(formatTraceparent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", 1), valid);
    for (const [value, problem] of [
      ["00-4bf9-00f067aa0ba902b7-01", /trace id must be 32 hex digits/],
      ["00-00000000000000000000000000000000-00f067aa0ba902b7-01", /trace id must not be all zeros/],
      ["00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", /span id must not be all zeros/],
      ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01", /span id must be 16 hex digits/],
      ["0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /version/],
      ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", /flags/],
      ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", /4 dash-separated fields/],
    ] as const) {
      assert.match(traceparentProblem(value) ?? "", problem, value);
    }
  });
});
