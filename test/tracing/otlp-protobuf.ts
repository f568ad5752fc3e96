// OTLP's protobuf encoding of a trace export (ExportTraceServiceRequest, from
// opentelemetry-proto's trace/v1 and common/v1 messages) decoded into the shape
// of its JSON encoding (ids as hex, attribute values as { stringValue | … }),
// so the test receiver reads either the same way. Only the fields the tests
// look at are kept; the rest is skipped by wire type, as protobuf readers do.

/** A field of a message: its number, and its value as read for its wire type. */
interface Field {
  number: number;
  /** Varint (wire type 0), as a bigint: int64 attribute values need its 64 bits. */
  varint?: bigint;
  /** Length-delimited bytes (wire type 2): a string, bytes or an embedded message. */
  bytes?: Buffer;
  /** Fixed 64 bits (wire type 1): a double's or a timestamp's bytes. */
  fixed64?: Buffer;
}

function* fields(buffer: Buffer): Generator<Field> {
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buffer[at++];
      if (byte === undefined) throw new Error('truncated varint');
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
  };
  while (at < buffer.length) {
    const key = Number(varint());
    const number = key >>> 3;
    const wireType = key & 7;
    if (wireType === 0) yield { number, varint: varint() };
    else if (wireType === 1) yield { number, fixed64: buffer.subarray(at, (at += 8)) };
    else if (wireType === 2) {
      const length = Number(varint());
      yield { number, bytes: buffer.subarray(at, (at += length)) };
    } else if (wireType === 5) at += 4;
    else throw new Error(`unsupported wire type ${wireType}`);
  }
}

/** The fields numbered `number` of `buffer`, as embedded messages or strings. */
const all = (buffer: Buffer, number: number): Buffer[] => [...fields(buffer)].filter((field) => field.number === number && field.bytes).map((field) => field.bytes!);
const first = (buffer: Buffer, number: number): Field | undefined => [...fields(buffer)].find((field) => field.number === number);

/** AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4. */
function anyValue(buffer: Buffer): { stringValue?: string; boolValue?: boolean; intValue?: string; doubleValue?: number } {
  const field = [...fields(buffer)][0];
  if (!field) return {};
  if (field.number === 1) return { stringValue: field.bytes!.toString('utf8') };
  if (field.number === 2) return { boolValue: field.varint !== 0n };
  if (field.number === 3) return { intValue: BigInt.asIntN(64, field.varint!).toString() };
  if (field.number === 4) return { doubleValue: field.fixed64!.readDoubleLE(0) };
  return {};
}

/** KeyValue: key 1, value 2. */
const attributes = (message: Buffer, number: number) =>
  all(message, number).map((keyValue) => ({ key: first(keyValue, 1)?.bytes?.toString('utf8') ?? '', value: anyValue(first(keyValue, 2)?.bytes ?? Buffer.alloc(0)) }));

/** Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, attributes 9, status 15 (code 3). */
function span(message: Buffer) {
  const hex = (number: number) => first(message, number)?.bytes?.toString('hex') ?? '';
  const status = first(message, 15)?.bytes;
  return {
    traceId: hex(1),
    spanId: hex(2),
    parentSpanId: hex(4),
    name: first(message, 5)?.bytes?.toString('utf8') ?? '',
    kind: Number(first(message, 6)?.varint ?? 0n),
    attributes: attributes(message, 9),
    status: { code: Number((status && first(status, 3)?.varint) ?? 0n) },
  };
}

/**
 * ExportTraceServiceRequest: resource_spans 1 › (resource 1 › attributes 1,
 * scope_spans 2 › spans 2), in the JSON encoding's shape.
 */
export function decodeTraceExport(body: Buffer) {
  return {
    resourceSpans: all(body, 1).map((resourceSpans) => ({
      resource: { attributes: attributes(first(resourceSpans, 1)?.bytes ?? Buffer.alloc(0), 1) },
      scopeSpans: all(resourceSpans, 2).map((scopeSpans) => ({ spans: all(scopeSpans, 2).map(span) })),
    })),
  };
}
