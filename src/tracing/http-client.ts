import { ATTR } from './attributes.js';
import { tracingOn, withSpan, type SpanAttributes } from './span.js';

/** One outgoing HTTP request, as its client span names it. */
export interface TracedRequest {
  method: string;
  /** Path (or absolute URL) asked for. */
  path: string;
  /** The host it goes to. */
  host: string;
  attributes?: SpanAttributes;
}

/**
 * A client span around sending one HTTP request (named by its method, as
 * the semantic conventions say for requests without a route template),
 * with the status `statusOf` reads from what `send` returned (null: no answer).
 */
export function traceClientRequest<T>(request: TracedRequest, send: () => Promise<T>, statusOf: (result: T) => number | null | undefined): Promise<T> {
  if (!tracingOn()) return send();
  // The path alone (a Link header's next page is a whole URL; its query is paging, not the resource).
  const path = /^https?:\/\//i.test(request.path) ? new URL(request.path).pathname : request.path.split('?', 1)[0]!;
  const attributes = { [ATTR.httpRequestMethod]: request.method, [ATTR.urlPath]: path, [ATTR.serverAddress]: request.host, ...request.attributes };
  return withSpan(
    request.method,
    attributes,
    async (span) => {
      const result = await send();
      const status = statusOf(result);
      span.setAttributes(status === null || status === undefined ? { [ATTR.errorType]: 'no_answer' } : { [ATTR.httpResponseStatusCode]: status, ...(status >= 400 ? { [ATTR.errorType]: String(status) } : {}) });
      return result;
    },
    { role: 'client' },
  );
}
