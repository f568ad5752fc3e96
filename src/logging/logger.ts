import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * The JSON logger every component writes to. Known secret-bearing fields
 * are censored by pino; free text is redacted by the callers before it is
 * logged (see util/redact.ts).
 */
export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      name: 'forgesync',
      level: options.level ?? process.env.FORGESYNC_LOG_LEVEL ?? 'info',
      redact: {
        paths: ['token', '*.token', 'password', '*.password', 'authorization', '*.authorization', 'secret', '*.secret'],
        censor: '***',
      },
    },
    // Asynchronous: under load, lines written while a write is in flight go out in one (pino flushes them at exit).
    options.destination ?? pino.destination({ dest: 2, sync: false }),
  );
}
