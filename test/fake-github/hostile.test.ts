import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateProject } from './generate.js';
import { BAD_ESCAPE_PATH, withHostileLinks } from './hostile.js';
import { startFakeGitHub, type FakeGitHub } from './server.js';
import { api } from './walk.js';

const TOKEN = 'hostile-token';
const MiB = 2 ** 20;

/** GETs `url` reading at most `limit` bytes; the status, headers and how much came. */
function peek(url: string, limit: number): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bytes: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { 'user-agent': 'hostile-test', authorization: `token ${TOKEN}` } }, (res) => {
      let bytes = 0;
      let text = '';
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (text.length < 64) text += chunk.toString('latin1');
        if (bytes >= limit) {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, text });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the hostile mode', () => {
  let fake: FakeGitHub;
  let repo: string;

  beforeAll(async () => {
    fake = await startFakeGitHub({
      tokens: [TOKEN],
      git: false,
      project: withHostileLinks(generateProject({ issues: 250, pulls: 5, commentsPerIssue: 0, users: 5, seed: 4 })),
      hostile: {
        largePageBytes: 64 * MiB,
        largePageChunked: true,
        drip: { match: '/users/', everyMs: 2 },
        redirect: { match: '/repos/acme-org/bigrepo/labels', to: 'http://127.0.0.2:9/labels' },
        fileRedirect: { match: '/files/', to: 'http://10.0.0.7/stolen' },
      },
    });
    repo = `${fake.apiUrl}/repos/acme-org/bigrepo`;
  });
  afterAll(async () => fake?.close());

  it('serves page 1 as it is and a 64 MiB JSON array, chunked, on page 2 and later', async () => {
    const first = await api(`${repo}/issues?state=all&per_page=100&page=1`, { token: TOKEN });
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(100);
    const second = await peek(`${repo}/issues?state=all&per_page=100&page=2`, 2 * MiB);
    expect(second.status).toBe(200);
    expect(second.headers['content-length']).toBeUndefined();
    expect(second.headers['transfer-encoding']).toBe('chunked');
    expect(second.text.startsWith('[{"id":1,"x":[0]},')).toBe(true);
    expect(second.bytes).toBeGreaterThanOrEqual(2 * MiB);
  });

  it('states the large size when not chunked, and sends it all to a client that reads it', async () => {
    const other = await startFakeGitHub({ tokens: [TOKEN], git: false, project: generateProject({ issues: 150, users: 3, seed: 5 }), hostile: { largePageBytes: 3 * MiB } });
    try {
      const answer = await api(`${other.apiUrl}/repos/acme-org/bigrepo/issues?state=all&per_page=100&page=2`, { token: TOKEN });
      expect(answer.status).toBe(200);
      expect(Number(answer.headers.get('content-length'))).toBe(answer.text.length);
      expect(answer.text.length).toBeGreaterThanOrEqual(3 * MiB);
      expect(Array.isArray(answer.body)).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('drips matching answers a byte at a time', async () => {
    const started = Date.now();
    const user = await api(`${fake.apiUrl}/users/${fake.project.repo.owner}`, { token: TOKEN });
    expect(user.status).toBe(200);
    // A profile is about a kilobyte: at 2 ms a byte it takes seconds, not milliseconds.
    expect(Date.now() - started).toBeGreaterThan(user.text.length * 1.5);
  }, 30_000);

  it('redirects matching API requests and attachments where it says', async () => {
    const labels = await api(`${repo}/labels`, { token: TOKEN, redirect: 'manual' });
    expect(labels.status).toBe(302);
    expect(labels.headers.get('location')).toBe('http://127.0.0.2:9/labels');
    const file = await fetch(`${fake.webUrl}${BAD_ESCAPE_PATH}`, { redirect: 'manual' });
    expect(file.status).toBe(302);
    expect(file.headers.get('location')).toBe('http://10.0.0.7/stolen');
  });

  it('links files on foreign, metadata, private and loopback addresses, and one of its own with a malformed escape', async () => {
    const issue = (await api(`${repo}/issues/1`, { token: TOKEN })).body as { body: string };
    expect(issue.body).toContain(`${fake.foreignUrl}/user-attachments/assets/`);
    expect(issue.body).toContain('http://169.254.169.254/');
    expect(issue.body).toContain('http://10.0.0.7/');
    expect(issue.body).toContain('http://127.0.0.2:9/');
    expect(issue.body).toContain(`${fake.webUrl}${BAD_ESCAPE_PATH}`);
    expect(fake.expected().attachmentUrls).toContain(`${fake.webUrl}${BAD_ESCAPE_PATH}`);
  });
});

describe('an attachment named with a malformed escape, without hostile options', () => {
  it('is served like any other', async () => {
    const fake = await startFakeGitHub({ tokens: [TOKEN], git: false, project: withHostileLinks(generateProject({ issues: 3, users: 2, seed: 6 })) });
    try {
      const file = await fetch(`${fake.webUrl}${BAD_ESCAPE_PATH}`);
      expect(file.status).toBe(200);
      expect((await file.arrayBuffer()).byteLength).toBe(120);
    } finally {
      await fake.close();
    }
  });
});
