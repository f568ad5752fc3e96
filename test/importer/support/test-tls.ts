import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/*
 * A throwaway certificate authority and a server certificate it signed for
 * 127.0.0.1 and localhost, made fresh for one test run with Debian's openssl
 * (Node can make keys but not certificates). gh 2.23 speaks only https to a
 * GH_HOST, and Go's TLS trusts the CA when its file is handed over as
 * SSL_CERT_FILE, so no system trust store is ever touched. Everything lives
 * in a temp directory that `remove` deletes; keys are P-256 (quick to make)
 * and valid for two days.
 */

const OPENSSL = '/usr/bin/openssl';
const run = promisify(execFile);

export interface TestCertificates {
  /** Path of the CA's certificate (PEM): what a client is told to trust (SSL_CERT_FILE). */
  caFile: string;
  /** The server's certificate (PEM), for 127.0.0.1 and localhost, signed by the CA. */
  cert: string;
  /** The server's private key (PEM). */
  key: string;
  /** Deletes the temp directory holding the files. */
  remove(): void;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await run(OPENSSL, args, { cwd, timeout: 30_000 });
}

/** Makes a CA and a server certificate signed by it in a new temp directory (see above). */
export async function makeTestCertificates(): Promise<TestCertificates> {
  const dir = mkdtempSync(join(tmpdir(), 'forgesync-tls-'));
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    await openssl(
      ['req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=forgesync test CA',
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
      dir,
    );
    await openssl(['req', ...ecKey, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'], dir);
    // Go checks the subjectAltName only (never the CN), so the IP and the name are both listed there.
    writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n');
    await openssl(
      ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext'],
      dir,
    );
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`making the test certificates with ${OPENSSL} failed (apt-get install openssl): ${(error as Error).message}`);
  }
  return {
    caFile: join(dir, 'ca.pem'),
    cert: readFileSync(join(dir, 'server.pem'), 'utf8'),
    key: readFileSync(join(dir, 'server.key'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
