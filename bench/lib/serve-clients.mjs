// Clients of bench/serve.mjs: the real `git clone`, and a protocol-v2 fetch
// written here that asks for exactly what a clone of one commit asks for and
// reads the answer to its end without writing a repository (so that 32 of
// them at once load the server, not this 2-core machine's index-pack).
import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { PLAIN_GIT_ENV } from './git-fleet.mjs';

/**
 * `git clone --bare --quiet [--filter=…] <url> <dir>` with the token as a
 * Bearer header (sent from the first request on, as CI does). Resolves with
 * the wall time and the size of the pack(s) received.
 */
export function gitClone(url, dir, { filter, token }) {
  const args = ['-c', `http.extraHeader=Authorization: Bearer ${token}`, 'clone', '--bare', '--quiet', ...(filter ? [`--filter=${filter}`] : []), url, dir];
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile('git', args, { env: PLAIN_GIT_ENV, maxBuffer: 16 * 1024 * 1024, timeout: 30 * 60_000, killSignal: 'SIGKILL' }, (error, _stdout, stderr) => {
      const ms = performance.now() - started;
      if (error) reject(new Error(`git clone ${url}: ${String(stderr).trim() || error.message}`));
      else resolve({ ms });
    });
  });
}

const pkt = (text) => (Buffer.byteLength(text) + 4).toString(16).padStart(4, '0') + text;

/** The body of a protocol-v2 `fetch` of `wants` (and `filter`, `depth`), as `git clone -q` sends it. */
export function fetchRequestBody({ wants, filter, depth, agent = 'git/2.39.5' }) {
  return (
    pkt('command=fetch\n') +
    pkt(`agent=${agent}\n`) +
    pkt('object-format=sha1\n') +
    '0001' +
    pkt('thin-pack\n') +
    pkt('no-progress\n') +
    pkt('ofs-delta\n') +
    (depth ? pkt(`deepen ${depth}\n`) : '') +
    (filter ? pkt(`filter ${filter}\n`) : '') +
    wants.map((sha) => pkt(`want ${sha}\n`)).join('') +
    pkt('done\n') +
    '0000'
  );
}

/**
 * Reads a v2 fetch answer: pkt-lines, the `packfile` section's lines
 * side-band framed (1 pack data, 2 progress, 3 error). Counts pack bytes,
 * fails on an error line or an answer that does not end in a flush packet.
 */
class FetchAnswer {
  packBytes = 0;
  #buffer = Buffer.alloc(0);
  #inPack = false;
  #flushed = false;

  push(chunk) {
    this.#buffer = this.#buffer.length ? Buffer.concat([this.#buffer, chunk]) : chunk;
    let at = 0;
    while (this.#buffer.length - at >= 4) {
      const length = Number.parseInt(this.#buffer.toString('latin1', at, at + 4), 16);
      if (Number.isNaN(length)) throw new Error('the fetch answer is not pkt-lines');
      if (length < 4) {
        // 0000 flush (the end), 0001 delim, 0002 response-end
        if (length === 0) this.#flushed = true;
        at += 4;
        continue;
      }
      if (this.#buffer.length - at < length) break;
      const line = this.#buffer.subarray(at + 4, at + length);
      at += length;
      if (!this.#inPack) {
        const text = line.toString('latin1');
        if (text.startsWith('ERR ')) throw new Error(`the server answered ${text.trim()}`);
        if (text === 'packfile\n') this.#inPack = true;
        continue;
      }
      if (line[0] === 1) this.packBytes += line.length - 1;
      else if (line[0] === 3) throw new Error(`the server failed: ${line.subarray(1).toString('utf8').trim()}`);
    }
    this.#buffer = this.#buffer.subarray(at);
  }

  end() {
    if (!this.#inPack || !this.#flushed || this.#buffer.length) throw new Error('the fetch answer ended early (no pack, or no closing flush packet)');
    if (this.packBytes < 32) throw new Error(`the pack is only ${this.packBytes} bytes`);
  }
}

/**
 * POSTs one v2 fetch to `<repoUrl>/git-upload-pack` and reads the whole
 * answer. Resolves with { ms, packBytes }; rejects when nothing arrives for `idleTimeoutMs`.
 */
export function fetchPack(repoUrl, { body, token, idleTimeoutMs = 120_000 }) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${repoUrl}/git-upload-pack`,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/x-git-upload-pack-request',
          accept: 'application/x-git-upload-pack-result',
          'git-protocol': 'version=2',
          authorization: `Bearer ${token}`,
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`POST ${repoUrl}/git-upload-pack: HTTP ${res.statusCode}`));
        }
        const answer = new FetchAnswer();
        const fail = (error) => reject(new Error(`POST ${repoUrl}/git-upload-pack: ${error.message}`));
        res.on('data', (chunk) => {
          try {
            answer.push(chunk);
          } catch (error) {
            fail(error);
            res.destroy();
          }
        });
        res.on('error', fail);
        res.on('end', () => {
          try {
            answer.end();
            resolve({ ms: performance.now() - started, packBytes: answer.packBytes });
          } catch (error) {
            fail(error);
          }
        });
      },
    );
    // A server that stops sending (a hung pack-objects or hook) fails the fetch instead of the bench hanging.
    req.setTimeout(idleTimeoutMs, () => req.destroy(new Error(`POST ${repoUrl}/git-upload-pack: nothing received for ${idleTimeoutMs / 1000} s`)));
    req.on('error', reject);
    req.end(body);
  });
}
