import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGitHub, type FakeGitHub } from './server.js';
import { api } from './walk.js';

const TOKEN = 'attach-token';
let fake: FakeGitHub;

beforeAll(async () => {
  fake = await startFakeGitHub({ tokens: [TOKEN], git: false });
});

afterAll(async () => {
  await fake?.close();
});

async function download(url: string, redirect: 'follow' | 'manual' = 'follow'): Promise<{ status: number; type: string | null; location: string | null; bytes: Buffer }> {
  const response = await fetch(url, { redirect, headers: { 'user-agent': 'attachments-test' } });
  return { status: response.status, type: response.headers.get('content-type'), location: response.headers.get('location'), bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('attachments on the web host', () => {
  it('serves deterministic bytes with the right content types', async () => {
    const urls = fake.expected().attachmentUrls;
    expect(urls).toHaveLength(4);
    const png = await download(urls.find((u) => u.includes('3f6c2a8e')) as string);
    expect(png).toMatchObject({ status: 200, type: 'image/png' });
    expect(png.bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.bytes.length).toBeGreaterThan(1500);
    const zip = await download(`${fake.webUrl}/acme-org/widgets/files/9001/logs.zip`);
    expect(zip).toMatchObject({ status: 200, type: 'application/zip' });
    expect(zip.bytes.subarray(0, 4).toString('latin1')).toBe('PK\u0003\u0004');
    const text = await download(`${fake.webUrl}/acme-org/widgets/files/9002/notes.txt`);
    expect(text).toMatchObject({ status: 200, type: 'text/plain' });
    expect(text.bytes.length).toBe(300);
    const other = await startFakeGitHub({ git: false });
    try {
      const again = await download(`${other.webUrl}/user-attachments/assets/3f6c2a8e-1b7d-4c1e-9a55-0d2f8c4b7e11`);
      expect(again.bytes.equals(png.bytes)).toBe(true);
    } finally {
      await other.close();
    }
    expect((await download(`${fake.webUrl}/user-attachments/assets/00000000-0000-4000-a000-000000000000`)).status).toBe(404);
  });

  it('one attachment answers 302 to another path on the same host', async () => {
    const url = `${fake.webUrl}/user-attachments/assets/9b1d7e44-52c3-4f0a-8e6d-77a1c2b3d4e5`;
    const first = await download(url, 'manual');
    expect(first.status).toBe(302);
    expect(first.location?.startsWith(`${fake.webUrl}/_storage/`)).toBe(true);
    const followed = await download(url);
    expect(followed).toMatchObject({ status: 200, type: 'image/png' });
    const log = fake.requests.filter((r) => r.path.includes('9b1d7e44'));
    expect(log.map((r) => [r.pathKind, r.status])).toEqual([['attachment', 302], ['attachment', 302], ['attachment', 200]]);
    expect(log.every((r) => !r.counted)).toBe(true);
  });

  it('release assets download from browser_download_url (302 then bytes) and through the API (302 to signed storage)', async () => {
    const releases = (await api(`${fake.apiUrl}/repos/acme-org/widgets/releases`, { token: TOKEN })).body;
    const asset = releases.find((r: { tag_name: string }) => r.tag_name === 'v1.0.0').assets[0];
    const hop = await download(asset.browser_download_url, 'manual');
    expect(hop.status).toBe(302);
    const file = await download(asset.browser_download_url);
    expect(file).toMatchObject({ status: 200, type: asset.content_type });
    expect(file.bytes.length).toBe(asset.size);
    expect(`sha256:${createHash('sha256').update(file.bytes).digest('hex')}`).toBe(asset.digest);
    const viaApi = await fetch(asset.url, { redirect: 'manual', headers: { 'user-agent': 't', authorization: `token ${TOKEN}`, accept: 'application/octet-stream' } });
    expect(viaApi.status).toBe(302);
    const storage = viaApi.headers.get('location')!;
    expect(new URL(storage).searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    const stored = await download(storage);
    expect(stored).toMatchObject({ status: 200, type: asset.content_type });
    expect(stored.bytes.equals(file.bytes)).toBe(true);
    const json = await api(asset.url, { token: TOKEN });
    expect(json.body.id).toBe(asset.id);
  });

  it('a draft is listed only to a token; its assets answer 404 on the web and come only through the API asset endpoint, like GitHub', async () => {
    const anonymous = (await api(`${fake.apiUrl}/repos/acme-org/widgets/releases`)).body;
    expect(anonymous.some((r: { draft: boolean }) => r.draft)).toBe(false);
    const releases = (await api(`${fake.apiUrl}/repos/acme-org/widgets/releases`, { token: TOKEN })).body;
    const draft = releases.find((r: { draft: boolean }) => r.draft);
    expect(draft).toMatchObject({ tag_name: 'v1.1.0', published_at: null });
    expect(draft.html_url).toMatch(/\/releases\/tag\/untagged-[0-9a-f]{20}$/);
    const asset = draft.assets[0];
    expect(asset.browser_download_url).toMatch(/\/releases\/download\/untagged-[0-9a-f]{20}\/widgets-1\.1\.0\.zip$/);
    expect((await download(asset.browser_download_url)).status).toBe(404);
    expect((await fetch(asset.url, { redirect: 'manual', headers: { 'user-agent': 't', accept: 'application/octet-stream' } })).status).toBe(404);
    const viaApi = await fetch(asset.url, { redirect: 'manual', headers: { 'user-agent': 't', authorization: `token ${TOKEN}`, accept: 'application/octet-stream' } });
    expect(viaApi.status).toBe(302);
    const storage = viaApi.headers.get('location')!;
    // The storage URL is signed: a token sent along is refused (as S3 does), and so is a wrong signature, or the URL without one.
    expect((await fetch(storage, { headers: { 'user-agent': 't', authorization: `token ${TOKEN}` } })).status).toBe(400);
    const forged = new URL(storage);
    forged.searchParams.set('X-Amz-Signature', '0'.repeat(64));
    expect((await download(forged.toString())).status).toBe(403);
    forged.search = '';
    expect((await download(forged.toString())).status).toBe(404);
    const file = await download(storage);
    expect(file).toMatchObject({ status: 200, type: 'application/zip' });
    expect(`sha256:${createHash('sha256').update(file.bytes).digest('hex')}`).toBe(asset.digest);
    const log = fake.requests.filter((r) => r.path === new URL(storage).pathname);
    expect(log.map((r) => [r.host, r.authorization, r.status])).toEqual([['web', true, 400], ['web', false, 403], ['web', false, 404], ['web', false, 200]]);
  });

  it('the foreign link is served by another origin and logged as foreign', async () => {
    const issue = (await api(`${fake.apiUrl}/repos/acme-org/widgets/issues/1`, { token: TOKEN })).body;
    const foreign = /\((http:\/\/127\.0\.0\.1:\d+\/evil\/tracker\.png)\)/.exec(issue.body)?.[1] as string;
    expect(foreign.startsWith(fake.foreignUrl)).toBe(true);
    expect(new URL(foreign).origin).not.toBe(new URL(fake.webUrl).origin);
    expect(fake.expected().attachmentUrls).not.toContain(foreign);
    const before = fake.requests.filter((r) => r.host === 'foreign').length;
    expect((await download(foreign)).status).toBe(200);
    expect(fake.requests.filter((r) => r.host === 'foreign').map((r) => r.pathKind)).toEqual([...Array(before).fill('foreign'), 'foreign']);
  });
});
