/**
 * Job data: {@link Payload} (bytes plus an encoding hint), {@link Priority}, and the value types of
 * custom metadata ({@link CustomValue}).
 */
import { ValidationError } from "./errors.js";

const utf8 = new TextDecoder("utf-8");

/**
 * A job's opaque data and its encoding (a MIME type by convention). The data is never empty: a job
 * without data carries no payload at all.
 */
export class Payload {
  /** The bytes. */
  readonly data: Buffer;
  /** How the bytes are encoded, e.g. `application/json`. */
  readonly encoding: string;

  /** A payload of `data` with `encoding`; prefer the factories {@link Payload.json}, `text` and `bytes`. */
  constructor(data: Uint8Array, encoding: string) {
    if (!(data instanceof Uint8Array))
      throw new ValidationError("payload data must be a Uint8Array or Buffer");
    if (data.length === 0) {
      throw new ValidationError("payload data must not be empty (omit the payload for a job without data)");
    }
    if (typeof encoding !== "string") throw new ValidationError("payload encoding must be a string");
    this.data = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.encoding = encoding;
  }

  /** `value` as JSON, encoding `application/json`. */
  static json(value: unknown): Payload {
    const text = JSON.stringify(value);
    if (text === undefined) throw new ValidationError("Payload.json needs a value that JSON can represent");
    return new Payload(Buffer.from(text, "utf8"), "application/json");
  }

  /** A string as UTF-8, encoding `text/plain` unless another is given. */
  static text(text: string, encoding = "text/plain"): Payload {
    if (typeof text !== "string") throw new ValidationError("Payload.text needs a string");
    return new Payload(Buffer.from(text, "utf8"), encoding);
  }

  /** Raw bytes, encoding `application/octet-stream` unless another is given. */
  static bytes(data: Uint8Array, encoding = "application/octet-stream"): Payload {
    return new Payload(data, encoding);
  }

  /** The data parsed as JSON (throws a `SyntaxError` if it is not JSON). */
  json<T = unknown>(): T {
    return JSON.parse(this.text()) as T;
  }

  /** The data decoded as UTF-8. */
  text(): string {
    return utf8.decode(this.data);
  }
}

/** Job priorities: 0 (lowest) to 9 (highest); a higher priority is reserved first. */
export const Priority = {
  P0: 0,
  P1: 1,
  P2: 2,
  P3: 3,
  P4: 4,
  P5: 5,
  P6: 6,
  P7: 7,
  P8: 8,
  P9: 9,
} as const;

/** A priority from 0 to 9. */
export type Priority = (typeof Priority)[keyof typeof Priority];

/**
 * A custom metadata value. On the wire each is a string, an int64, a double or a bool: strings and
 * booleans map directly, a `bigint` and an integral `number` (within ±2^53) are ints, and any other
 * number is a double. Received ints are numbers when they fit in ±2^53, and bigints otherwise.
 */
export type CustomValue = string | number | bigint | boolean;
