// An OTLP/HTTP trace receiver for the tests: a real HTTP server on 127.0.0.1
// taking `POST /v1/traces` in either of OTLP/HTTP's encodings, as a collector
// does: protobuf (`application/x-protobuf`, forgesync's default, decoded by
// otlp-protobuf.ts) or JSON (`application/json`, ids as hex, attribute values
// as { stringValue | intValue | … }).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '../support/eventually.js';
import { decodeTraceExport } from './otlp-protobuf.js';

type AttributeValue = string | number | boolean;

/** One received span, flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** Its resource's attributes (service.name, OTEL_RESOURCE_ATTRIBUTES). */
  resource: Record<string, AttributeValue>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
}

const valueOf = (value: OtlpAttribute['value']): AttributeValue =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue ?? ''));
const attributesOf = (list: OtlpAttribute[] | undefined) => Object.fromEntries((list ?? []).map((entry) => [entry.key, valueOf(entry.value)]));

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Export requests received (a tracing-off process must send none). */
  requests = 0;
  /** Content types the requests came with. */
  readonly contentTypes = new Set<string>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.method !== 'POST' || request.url !== '/v1/traces') {
          response.writeHead(404).end();
          return;
        }
        receiver.requests++;
        const contentType = String(request.headers['content-type']);
        receiver.contentTypes.add(contentType);
        const body = Buffer.concat(chunks);
        receiver.#take(contentType.startsWith('application/x-protobuf') ? decodeTraceExport(body) : JSON.parse(body.toString('utf8')));
        // An empty ExportTraceServiceResponse, in the request's encoding: everything accepted.
        if (contentType.startsWith('application/x-protobuf')) response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        else response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** The endpoint to give as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds `/v1/traces`). */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  #take(body: { resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: any[] }[] }[] }): void {
    for (const resourceSpans of body.resourceSpans ?? []) {
      const resource = attributesOf(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            resource,
            status: span.status?.code ?? 0,
          });
        }
      }
    }
  }

  /** Waits until a received span matches `match`, and returns it. */
  waitFor(what: string, match: (span: ReceivedSpan) => boolean, timeoutMs = 30_000): Promise<ReceivedSpan> {
    return eventually(what, async () => this.spans.find(match) ?? null, timeoutMs, 50);
  }

  /** The span with id `spanId`. */
  byId(spanId: string | undefined): ReceivedSpan | undefined {
    return this.spans.find((span) => span.spanId === spanId);
  }

  /** `span`'s ancestors received so far, nearest first. */
  ancestors(span: ReceivedSpan): ReceivedSpan[] {
    const chain: ReceivedSpan[] = [];
    for (let parent = this.byId(span.parentSpanId); parent; parent = this.byId(parent.parentSpanId)) chain.push(parent);
    return chain;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
