/** The package version, sent in the `user-agent` of every connection (kept equal to package.json by a test). */
export const VERSION = "0.2.0";

/** The client's name and version, as it introduces itself to the server. */
export const USER_AGENT = `sepp-js/${VERSION}`;
