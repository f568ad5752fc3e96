// forgesync dashboard, shared base: the JSON API and the bearer token.
//
// The token lives in this tab's session storage and travels as a bearer header
// (no cookie, so nothing for CSRF to ride on). A 401 hands the page to the shell,
// which asks for a token (see onUnauthorized); every other failure is an ApiError
// with the server's error code and message.

const TOKEN_KEY = 'forgesync.token';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const enc = encodeURIComponent;

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** What a 401 does: the shell's token form (set once by the shell at start). */
let unauthorized = () => {};
export function onUnauthorized(handler) {
  unauthorized = handler;
}

/** Calls the API; resolves with the parsed JSON answer (null when empty), rejects with an ApiError. */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  const bearer = token();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  // The server takes state changes only as JSON (no form or text/plain request from another page can be one).
  if (method !== 'GET') headers['content-type'] = 'application/json';
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, 'network', `the server did not answer (${error.message})`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.status === 401) {
    unauthorized(bearer ? 'The server refused this token. Enter another one.' : 'This server needs an API token.');
    throw new ApiError(401, 'unauthorized', data?.message ?? 'a valid token is required');
  }
  if (!response.ok) {
    throw new ApiError(response.status, data?.error ?? `http_${response.status}`, data?.message ?? `${response.status} ${response.statusText}`);
  }
  return data;
}

/** For `.catch()`: a 404 answers `fallback` (the page then says "not found"); anything else still fails. */
export function notFound(fallback) {
  return (error) => {
    if (error instanceof ApiError && error.status === 404) return fallback;
    throw error;
  };
}
