/** Marks an error as "the backend is not there", which skips the backend instead of failing it. */
export function unreachable(cause) {
  const reason = describeError(cause);
  return Object.assign(new Error(reason, { cause }), { unreachable: true });
}

/** A one-line reason: the message, or the codes of an AggregateError (ECONNREFUSED on ::1 and 127.0.0.1). */
export function describeError(error) {
  if (!error) return 'unknown error';
  if (error instanceof AggregateError && error.errors?.length) {
    return [...new Set(error.errors.map((e) => e.code ?? e.message))].join(', ');
  }
  return error.message || error.code || String(error);
}

/** The URL with any password replaced by ***. */
export function redactUrl(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
