// Loaded with `node --import` by the README example test: resolves the example's host name,
// emails.internal, to the loopback address where the test's TLS server listens.
import dns from "node:dns";

const lookup = dns.promises.lookup.bind(dns.promises);
dns.promises.lookup = (hostname, options) => {
  if (hostname !== "emails.internal") return lookup(hostname, options);
  const address = { address: "127.0.0.1", family: 4 };
  return Promise.resolve(options?.all ? [address] : address);
};
