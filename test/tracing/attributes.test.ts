// forgesync spells the semantic-convention attribute names itself (so that
// instrumented code never loads @opentelemetry/semantic-conventions, see
// src/tracing/attributes.ts): each must be the package's own name.
import * as semconv from '@opentelemetry/semantic-conventions';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import { ATTR, DB_SYSTEM_NAME } from '../../src/tracing/attributes.js';

const STANDARD: Partial<Record<keyof typeof ATTR, string>> = {
  httpRequestMethod: semconv.ATTR_HTTP_REQUEST_METHOD,
  httpRoute: semconv.ATTR_HTTP_ROUTE,
  httpResponseStatusCode: semconv.ATTR_HTTP_RESPONSE_STATUS_CODE,
  urlPath: semconv.ATTR_URL_PATH,
  urlScheme: semconv.ATTR_URL_SCHEME,
  serverAddress: semconv.ATTR_SERVER_ADDRESS,
  clientAddress: semconv.ATTR_CLIENT_ADDRESS,
  errorType: semconv.ATTR_ERROR_TYPE,
  dbOperationName: semconv.ATTR_DB_OPERATION_NAME,
  dbSystemName: semconv.ATTR_DB_SYSTEM_NAME,
  messagingSystem: incubating.ATTR_MESSAGING_SYSTEM,
  messagingOperationType: incubating.ATTR_MESSAGING_OPERATION_TYPE,
  messagingOperationName: incubating.ATTR_MESSAGING_OPERATION_NAME,
  messagingDestinationName: incubating.ATTR_MESSAGING_DESTINATION_NAME,
  messagingMessageId: incubating.ATTR_MESSAGING_MESSAGE_ID,
};

describe('span attribute names', () => {
  it('are the semantic conventions’ names, and forgesync’s own are under forgesync.', () => {
    for (const [field, name] of Object.entries(ATTR) as [keyof typeof ATTR, string][]) {
      const standard = STANDARD[field];
      if (standard !== undefined) expect(name, field).toBe(standard);
      else expect(name, field).toMatch(/^forgesync\.[a-z_.]+$/);
    }
    expect(Object.keys(STANDARD).every((field) => field in ATTR)).toBe(true);
    expect(DB_SYSTEM_NAME).toEqual({ sqlite: incubating.DB_SYSTEM_NAME_VALUE_SQLITE, postgres: semconv.DB_SYSTEM_NAME_VALUE_POSTGRESQL });
  });
});
