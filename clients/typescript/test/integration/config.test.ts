/** The client against servers configured with API keys, TLS, and strict queues. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  ConnectError,
  InvalidApiKeyError,
  isJobRejection,
  SeppClient,
  UnauthenticatedError,
  UnknownQueuesError,
} from "../../src/index.js";
import { type Certificates, makeCertificates } from "../support/certs.js";
import { RecordingLogger } from "../support/helpers.js";
import { TestServer } from "../support/server.js";

describe("API keys", () => {
  let server: TestServer;
  before(async () => {
    server = await TestServer.start({ tail: '[auth]\napi_keys = [{ name = "tests", key = "k-1" }]' });
  });
  after(() => server?.stop());

  test("calls without the key, or with a wrong one, are unauthenticated", async () => {
    for (const apiKey of [undefined, "wrong"]) {
      const client = await SeppClient.connect(server.addr, { apiKey });
      await assert.rejects(client.getServerInfo(), UnauthenticatedError);
      await assert.rejects(
        client.reserve({ queues: ["q"], leaseDuration: 1_000, waitTimeout: 0 }),
        UnauthenticatedError,
      );
      client.close();
    }
  });

  test("the right key is accepted on every call", async () => {
    const client = await SeppClient.connect(server.addr, { apiKey: "k-1" });
    await client.getServerInfo();
    await client.enqueue({ queue: "q", jobType: "t" });
    const jobs = await client.reserve({ queues: ["q"], leaseDuration: 1_000 });
    assert.ok(jobs);
    await client.ack(jobs[0]?.ctx as NonNullable<typeof jobs>[number]["ctx"]);
    client.close();
  });

  test("a key that cannot be a header value fails at connect", async () => {
    await assert.rejects(SeppClient.connect(server.addr, { apiKey: "line\nbreak" }), InvalidApiKeyError);
  });
});

describe("TLS", () => {
  let server: TestServer;
  let certs: Certificates;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "sepp-js-tls-"));
    certs = makeCertificates(dir, ["sepp.test", "127.0.0.1"]);
    server = await TestServer.start({
      serverExtra: `tls_cert_path = ${JSON.stringify(certs.certPath)}\ntls_key_path = ${JSON.stringify(certs.keyPath)}`,
      tail: '[auth]\napi_keys = [{ name = "tests", key = "k-1" }]',
    });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("https:// or a CA turns TLS on; an API key then draws no warning", async () => {
    for (const addr of [`https://${server.addr}`, server.addr]) {
      const logger = new RecordingLogger();
      const client = await SeppClient.connect(addr, { tlsCaCert: certs.caPem, apiKey: "k-1", logger });
      assert.ok((await client.getServerInfo()).version.length > 0);
      assert.deepEqual(logger.messages("warn"), []);
      client.close();
    }
  });

  test("tlsDomain checks the certificate against another name", async () => {
    const client = await SeppClient.connect(server.addr, {
      tlsCaCert: certs.caPem.toString(),
      tlsDomain: "sepp.test",
      apiKey: "k-1",
    });
    await client.getServerInfo();
    client.close();
    await assert.rejects(
      SeppClient.connect(server.addr, { tlsCaCert: certs.caPem, tlsDomain: "other.test" }),
      ConnectError,
    );
  });

  test("a CA that is not a PEM certificate fails to connect, saying so", async () => {
    await assert.rejects(
      SeppClient.connect(server.addr, { tlsCaCert: "not a certificate" }),
      (error: unknown) => {
        assert.ok(error instanceof ConnectError);
        assert.match(error.reason, /unusable TLS settings/);
        return true;
      },
    );
  });

  test("an untrusted certificate, or plaintext to a TLS server, fails to connect", async () => {
    await assert.rejects(SeppClient.connect(`https://${server.addr}`), (error: unknown) => {
      assert.ok(error instanceof ConnectError);
      assert.match(error.reason, /certificate/i);
      return true;
    });
    await assert.rejects(SeppClient.connect(server.addr, { connectTimeout: 10_000 }), ConnectError);
  });
});

describe("strict queues", () => {
  let server: TestServer;
  before(async () => {
    server = await TestServer.start({
      serverExtra: "strict_queues = true",
      tail: '[[queues]]\nname = "declared"',
    });
  });
  after(() => server?.stop());

  test("undeclared queues are refused: a rejection on enqueue, UnknownQueuesError on reserve", async () => {
    const client = await SeppClient.connect(server.addr);
    const [result] = await client.enqueueBatch([{ queue: "undeclared", jobType: "t" }]);
    assert.ok(isJobRejection(result));
    assert.deepEqual(result, { kind: "unknownQueue", queue: "undeclared" });
    await assert.rejects(
      client.reserve({ queues: ["declared", "undeclared"], leaseDuration: 1_000 }),
      UnknownQueuesError,
    );
    assert.equal(await client.reserve({ queues: ["declared"], leaseDuration: 1_000, waitTimeout: 0 }), null);
    assert.equal((await client.getServerInfo()).strictQueues, true);
    client.close();
  });
});
