import { InvalidPayloadError, parsePayload } from './body.js';
import { refusal, type DeliveryIntent } from './delivery.js';
import { readGitHub } from './github.js';
import { readGitLab } from './gitlab.js';
import { verifySignature } from './signature.js';

/**
 * An authenticated-or-not delivery as it arrived, with what reading it
 * needs from its headers: plain data, so it can be sent to a reader thread.
 * GitLab's token was checked with the headers (no body needed); GitHub's
 * signature is checked here, over the exact bytes.
 */
export interface DeliveryJob {
  provider: 'github' | 'gitlab';
  body: Uint8Array;
  /** `X-GitHub-Event` / `X-Gitlab-Event`. */
  event: string | undefined;
  /** GitHub's `X-Hub-Signature-256`. */
  signature?: string | undefined;
  contentType: string | undefined;
}

/** The secrets reading checks a body against. */
export interface ReadSecrets {
  github?: string | undefined;
}

/**
 * Reads one delivery: checks its signature, parses its payload and says
 * what it asks for, or the refusal (401 bad signature, 400 no event header
 * or an unreadable payload). Pure and synchronous: the costly part of a
 * delivery (HMAC and JSON over up to the body limit), kept apart from what
 * needs the registry so it can run on a reader thread.
 */
export function readDelivery(job: DeliveryJob, secrets: ReadSecrets): DeliveryIntent {
  const body = Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength);
  if (job.provider === 'github') {
    if (!secrets.github || !verifySignature(secrets.github, body, job.signature)) {
      return { answer: refusal(401, 'unauthorized', 'unauthorized', 'the signature does not match the body') };
    }
    if (!job.event) return { answer: refusal(400, 'invalid', 'invalid_payload', 'missing X-GitHub-Event header') };
    return parsed(body, job.contentType, (payload) => readGitHub(job.event!, payload));
  }
  if (!job.event) return { answer: refusal(400, 'invalid', 'invalid_payload', 'missing X-Gitlab-Event header') };
  return parsed(body, job.contentType, (payload) => readGitLab(job.event!, payload));
}

function parsed(body: Buffer, contentType: string | undefined, read: (payload: Record<string, unknown>) => DeliveryIntent): DeliveryIntent {
  try {
    return read(parsePayload(body, contentType));
  } catch (error) {
    if (error instanceof InvalidPayloadError) return { answer: refusal(400, 'invalid', 'invalid_payload', error.message) };
    throw error;
  }
}
