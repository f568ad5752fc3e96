/**
 * How a bad value is shown in an error message: strings quoted and cut to 40
 * characters, objects by their kind, never through the value's own toString
 * (which may throw, or lie).
 */
export function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? 'an array' : 'an object';
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `text` is well-formed Unicode: no lone surrogate (String.prototype.isWellFormed, which TypeScript's ES2023 lib lacks). */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}
