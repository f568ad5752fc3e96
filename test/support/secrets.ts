import { randomBytes } from 'node:crypto';

/**
 * A secret for a test: `FORGESYNC_TEST_<NAME>` from the environment when
 * set, else a fresh random value, so no credential-looking literal lives in
 * the repository. `prefix` (put in front of either) gives it the shape of a
 * real token where a test needs one (e.g. `ghs_` for a GitHub installation token).
 */
export function testSecret(name: string, prefix = ''): string {
  return `${prefix}${process.env[`FORGESYNC_TEST_${name}`] ?? randomBytes(18).toString('hex')}`;
}
