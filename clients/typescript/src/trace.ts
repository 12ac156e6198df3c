/**
 * {@link TraceContext}: the W3C `traceparent` (and optional `tracestate`) a job carries from its
 * producer to its worker, and the rules a traceparent must follow.
 */

/** A W3C trace context. `traceparent` is `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

const HEX = /^[0-9a-fA-F]+$/;

/**
 * Why `value` is not a valid traceparent, or `undefined` if it is one: four dash-separated hex fields
 * of 2, 32, 16 and 2 digits, with neither the trace id nor the span id all zeros (upper case allowed).
 */
export function traceparentProblem(value: string): string | undefined {
  const fields = value.split("-");
  if (fields.length !== 4) return "expected 4 dash-separated fields";
  const [version, traceId, spanId, flags] = fields as [string, string, string, string];
  const isHex = (field: string, length: number) => field.length === length && HEX.test(field);
  if (!isHex(version, 2)) return "version must be 2 hex digits";
  if (!isHex(traceId, 32)) return "trace id must be 32 hex digits";
  if (/^0+$/.test(traceId)) return "trace id must not be all zeros";
  if (!isHex(spanId, 16)) return "span id must be 16 hex digits";
  if (/^0+$/.test(spanId)) return "span id must not be all zeros";
  if (!isHex(flags, 2)) return "flags must be 2 hex digits";
  return undefined;
}

/** The parts of a valid traceparent, lower-cased. */
export function parseTraceparent(
  value: string,
): { traceId: string; spanId: string; flags: number } | undefined {
  if (traceparentProblem(value) !== undefined) return undefined;
  const [, traceId, spanId, flags] = value.toLowerCase().split("-") as [string, string, string, string];
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** The traceparent of a span context. */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, "0")}`;
}
