/**
 * The fake GitHub as a process (for benchmarks and manual runs):
 *
 *   npx tsc -p tsconfig.fake.json
 *   node dist-test/test/fake-github/main.js --issues 20000 --comments-per-issue 5 --latency-ms 30 --tokens a,b --limit 5000
 *   node dist-test/test/fake-github/main.js --small
 *
 * Prints one JSON line {"apiUrl","webUrl","foreignUrl","gitUrl","wikiGitUrl","pid","expected","budget"} on stdout
 * once listening, then serves until SIGTERM/SIGINT.
 */
import { runFakeGitHub, USAGE } from './cli.js';

async function main(): Promise<void> {
  const fake = await runFakeGitHub(process.argv.slice(2), (text) => process.stdout.write(text));
  if (!fake) return;
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    void fake.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n${USAGE}\n`);
  process.exit(2);
});
