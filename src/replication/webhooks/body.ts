import { InvalidInputError } from '../../errors.js';

/** The request body could not be read as the webhook payload it claims to be (400). */
export class InvalidPayloadError extends InvalidInputError {}

/** A JSON object from a payload; keys are read with the accessors below. */
export type Payload = Record<string, unknown>;

/**
 * Parses the raw body of a delivery, after its signature was checked:
 * JSON, or (GitHub's other content type) `application/x-www-form-urlencoded`
 * with the JSON in the `payload` field.
 * @throws InvalidPayloadError naming what is wrong.
 */
export function parsePayload(raw: Buffer, contentType: string | undefined): Payload {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  let text = raw.toString('utf8');
  if (type === 'application/x-www-form-urlencoded') {
    const field = new URLSearchParams(text).get('payload');
    if (field === null) throw new InvalidPayloadError('form-encoded delivery without a "payload" field');
    text = field;
  }
  if (text.trim() === '') throw new InvalidPayloadError('the body is empty; expected a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InvalidPayloadError(`the body is not valid JSON (${(error as Error).message})`);
  }
  if (!isObject(value)) throw new InvalidPayloadError('the payload must be a JSON object');
  return value;
}

/** Whether `value` is a plain JSON object. */
export function isObject(value: unknown): value is Payload {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `payload[key]` when it is an object. */
export function objectAt(payload: unknown, key: string): Payload | undefined {
  const value = isObject(payload) ? payload[key] : undefined;
  return isObject(value) ? value : undefined;
}

/** `payload[key]` when it is a non-empty string. */
export function stringAt(payload: unknown, key: string): string | undefined {
  const value = isObject(payload) ? payload[key] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}
