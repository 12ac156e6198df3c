/** Test certificates made with the openssl command: a CA, and a server certificate it signs. */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Certificates {
  /** The CA certificate (PEM), to trust. */
  caPem: Buffer;
  caPath: string;
  certPath: string;
  keyPath: string;
}

/** Makes a CA and a server certificate for `names` (DNS names and IP addresses) in `dir`. */
export function makeCertificates(dir: string, names: string[]): Certificates {
  const path = (name: string) => join(dir, name);
  const run = (...args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  run(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    path("ca.key"),
    "-out",
    path("ca.pem"),
    "-days",
    "2",
    "-subj",
    "/CN=sepp-js test CA",
  );
  run("req", ...ec, "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", `/CN=${names[0]}`);
  const san = names.map((name) => (/^[\d.]+$/.test(name) ? `IP:${name}` : `DNS:${name}`)).join(",");
  writeFileSync(path("san.ext"), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\n`);
  run(
    "x509",
    "-req",
    "-in",
    path("server.csr"),
    "-CA",
    path("ca.pem"),
    "-CAkey",
    path("ca.key"),
    "-CAcreateserial",
    "-out",
    path("server.pem"),
    "-days",
    "2",
    "-extfile",
    path("san.ext"),
  );
  return {
    caPem: readFileSync(path("ca.pem")),
    caPath: path("ca.pem"),
    certPath: path("server.pem"),
    keyPath: path("server.key"),
  };
}
