import { GithubAnswerError } from '../errors.js';
import { budgetSpent } from './rate-headers.js';

/*
 * Reading the API's answers for the client (client.ts): their bodies, the
 * errors @octokit/request raises for them, and which rate limit a refusal is.
 */

/**
 * An error answer's JSON without integers past 2^53 (written as strings
 * instead): @octokit/request parses an error body keeping such integers as
 * BigInt, then builds its message with JSON.stringify, which throws a
 * TypeError on one (a host answering 400 with `11111111111111111` would
 * escape as that, not as the answer). Anything that is not JSON is left as
 * it came.
 */
export function plainNumbers(body: Buffer): Buffer {
  try {
    const unsafe = (_key: string, value: unknown) => (typeof value === 'number' && Math.abs(value) > Number.MAX_SAFE_INTEGER ? String(value) : value);
    return Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8')), unsafe));
  } catch {
    return body;
  }
}

/** @octokit/request's RequestError (told by shape: the class is not a dependency of ours). */
export interface HttpError {
  status: number;
  message: string;
  response?: { headers: Record<string, string | undefined>; data: unknown };
}

export function httpErrorOf(error: unknown): HttpError | undefined {
  return error instanceof Error && error.name === 'HttpError' && typeof (error as Partial<HttpError>).status === 'number' ? (error as unknown as HttpError) : undefined;
}

/** The bytes behind each answer's body stream (see #fetchWith). */
export const RAW_BODIES = new WeakMap<object, Buffer>();

/**
 * How to parse a success body (a stream, with parsing left to us: JSON when
 * it says so, else text), and its size. JSON that does not parse is the API
 * host's fault: a GithubAnswerError naming `path`, not a SyntaxError.
 */
export async function bodyParser<T>(body: unknown, headers: Record<string, string | undefined>, path: string): Promise<{ parse: () => T; bytes: number }> {
  if (!body) return { parse: () => undefined as T, bytes: 0 };
  const raw = RAW_BODIES.get(body as object);
  const text = raw ? undefined : await new Response(body as ReadableStream).text();
  const json = /json/i.test(headers['content-type'] ?? '');
  return {
    bytes: raw?.length ?? Buffer.byteLength(text!),
    parse: () => {
      const content = text ?? raw!.toString('utf8');
      if (!json || content === '') return content as T;
      try {
        return JSON.parse(content) as T;
      } catch {
        throw new GithubAnswerError(path, 'it is not valid JSON');
      }
    },
  };
}

export function messageOf(data: unknown): string | undefined {
  if (data && typeof data === 'object' && typeof (data as { message?: unknown }).message === 'string') return (data as { message: string }).message;
  return undefined;
}

/** Whether a refusal is GitHub's primary limit (budget spent), its secondary limit, or neither. */
export function limitOf(status: number, headers: Record<string, string | undefined>, message: string | undefined): 'primary' | 'secondary' | null {
  if (status !== 403 && status !== 429) return null;
  if (/secondary rate limit|abuse/i.test(message ?? '')) return 'secondary';
  if (budgetSpent(headers)) return 'primary';
  if (headers['retry-after'] !== undefined) return 'secondary';
  if (status === 429) return 'secondary';
  return /rate limit/i.test(message ?? '') ? 'primary' : null;
}

/** Whether a request failed because its connection was reset or closed under it (ECONNRESET, EPIPE), the cause anywhere in the chain. */
export function connectionReset(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ECONNRESET' || code === 'EPIPE') return true;
  }
  return false;
}
