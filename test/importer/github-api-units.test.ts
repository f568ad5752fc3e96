import { describe, expect, it } from 'vitest';
import { contentDisposition, safeContentType } from '../../src/importer/http/github-api/attachment-routes.js';
import { matchesEtag } from '../../src/importer/http/github-api/respond.js';
import { linkHeader, pageOf } from '../../src/importer/http/github-api/pagination.js';
import { completePull } from '../../src/importer/http/github-api/pull-routes.js';
import { AttachmentLinks, AttachmentRewriter, attachmentPath } from '../../src/importer/http/github-api/rewrite.js';
import { normaliseSince } from '../../src/importer/http/github-api/schemas.js';
import { ApiLinks, publicBase, renderLinks } from '../../src/importer/http/github-api/links.js';
import { serverSettings } from '../../src/server/settings.js';

const KEY_A = 'a'.repeat(64);
const KEY_B = 'b'.repeat(64);

describe('GitHub-compatible API: attachment rewriting', () => {
  const rewriter = new AttachmentRewriter('my import', [
    { url: 'https://github.com/user-attachments/assets/abc', urlKey: KEY_A, filename: 'shot.png' },
    { url: 'https://github.com/user-attachments/assets/abc/extra', urlKey: KEY_B, filename: null },
  ]);
  const base = 'http://h:1/github';
  const a = `${base}/attachments/my%20import/${KEY_A}/shot.png`;
  const b = `${base}/attachments/my%20import/${KEY_B}/attachment`;

  it('replaces each known URL where it ends, the longest first, in one pass', () => {
    expect(rewriter.rewriteText('![x](https://github.com/user-attachments/assets/abc) and <img src="https://github.com/user-attachments/assets/abc/extra">', base)).toBe(
      `![x](${a}) and <img src="${b}">`,
    );
    expect(rewriter.rewriteText('see https://github.com/user-attachments/assets/abc.', base)).toBe(`see ${a}.`);
    expect(rewriter.rewriteText('https://github.com/user-attachments/assets/abc\nhttps://github.com/user-attachments/assets/abc', base)).toBe(`${a}\n${a}`);
  });

  it('leaves URLs that only start like a known one', () => {
    for (const text of [
      'https://github.com/user-attachments/assets/abcd',
      'https://github.com/user-attachments/assets/abc/other',
      'https://github.com/user-attachments/assets/abc.png',
      'https://github.com/user-attachments/assets/abc?raw=1',
      'https://github.com/user-attachments/assets/ab',
    ]) {
      expect(rewriter.rewriteText(text, base)).toBe(text);
    }
  });

  it('rewrites only body fields and download URLs, at any depth', () => {
    const url = 'https://github.com/user-attachments/assets/abc';
    const value = { url, body: url, issue: { body: `(${url})`, title: url }, assets: [{ url, browser_download_url: url }], body_html: `<img src="${url}">`, body_text: url };
    expect(rewriter.rewrite(value, base)).toEqual({ url, body: a, issue: { body: `(${a})`, title: url }, assets: [{ url, browser_download_url: a }], body_html: `<img src="${a}">`, body_text: a });
  });

  it('encodes the import and file names in the path', () => {
    expect(attachmentPath('a/b', { urlKey: KEY_A, filename: 'r\u00e9sum\u00e9 "1".pdf' })).toBe(`/attachments/a%2Fb/${KEY_A}/r%C3%A9sum%C3%A9%20%221%22.pdf`);
  });

  it('reads an import\'s attachments once for a few seconds, then again', async () => {
    let reads = 0;
    let now = 0;
    const database = {
      dialect: 'sqlite',
      db: {
        selectFrom: () => {
          const chain = { select: () => chain, where: () => chain, execute: async () => (reads++, [{ url: 'https://x/y', url_key: KEY_A, filename: 'y' }]) };
          return chain;
        },
      },
    } as never;
    const links = new AttachmentLinks(database, () => now);
    const first = await links.forImport(1, 'n');
    expect(await links.forImport(1, 'n')).toBe(first);
    expect(reads).toBe(1);
    now = 10_000;
    expect(await links.forImport(1, 'n')).not.toBe(first);
    expect(reads).toBe(2);
  });
});

describe('GitHub-compatible API: pagination, times, headers', () => {
  it('defaults to 30 per page and counts more than 100 as 100', () => {
    expect(pageOf({})).toEqual({ page: 1, perPage: 30 });
    expect(pageOf({ per_page: 1000, page: 3 })).toEqual({ page: 3, perPage: 100 });
    expect(pageOf({ per_page: 7 })).toEqual({ page: 1, perPage: 7 });
  });

  it('links pages in GitHub\'s order, keeping the other parameters', () => {
    const origin = 'https://forgesync.example';
    expect(linkHeader(origin, '/github/x?state=all', { page: 1, perPage: 30 }, 30)).toBeUndefined();
    expect(linkHeader(origin, '/github/x', { page: 1, perPage: 30 }, 31)).toBe(
      `<${origin}/github/x?page=2>; rel="next", <${origin}/github/x?page=2>; rel="last"`,
    );
    expect(linkHeader(origin, '/github/x?page=2&labels=a,b', { page: 2, perPage: 30 }, 31)).toBe(
      `<${origin}/github/x?page=1&labels=a%2Cb>; rel="prev", <${origin}/github/x?page=1&labels=a%2Cb>; rel="first"`,
    );
  });

  it('reads `since` as GitHub does, rounded up to whole seconds, UTC without a zone', () => {
    expect(normaliseSince('2024-02-01T10:00:00Z')).toBe('2024-02-01T10:00:00Z');
    expect(normaliseSince('2024-02-01T10:00:00.001Z')).toBe('2024-02-01T10:00:01Z');
    expect(normaliseSince('2024-02-01T12:00:00+02:00')).toBe('2024-02-01T10:00:00Z');
    expect(normaliseSince('2024-02-01T12:00:00+0200')).toBe('2024-02-01T10:00:00Z');
    expect(normaliseSince('2024-02-01T10:00')).toBe('2024-02-01T10:00:00Z');
    expect(normaliseSince('2024-02-01')).toBe('2024-02-01T00:00:00Z');
    for (const bad of ['yesterday', '2024-13-01T00:00:00Z', '', '1706781600', '2024-02-01T10:00:00Zjunk']) expect(normaliseSince(bad), bad).toBeUndefined();
  });

  it('matches If-None-Match weakly, in lists and for *', () => {
    expect(matchesEtag('W/"abc"', 'W/"abc"')).toBe(true);
    expect(matchesEtag('"x", "abc"', 'W/"abc"')).toBe(true);
    expect(matchesEtag('*', 'W/"abc"')).toBe(true);
    expect(matchesEtag('W/"abd"', 'W/"abc"')).toBe(false);
    expect(matchesEtag(undefined, 'W/"abc"')).toBe(false);
  });

  it('fills a pull request\'s counts and `merged` only when the stored item lacks them', () => {
    expect(completePull({ merged_at: '2024-01-01T00:00:00Z' }, { comments: 2, reviewComments: 3 })).toEqual({ merged_at: '2024-01-01T00:00:00Z', merged: true, merged_by: null, comments: 2, review_comments: 3 });
    expect(completePull({ merged_at: null, comments: 9, review_comments: 8, merged: false }, { comments: 2, reviewComments: 3 })).toMatchObject({ merged: false, comments: 9, review_comments: 8 });
  });

  it('serves attachment names and types safely', () => {
    expect(contentDisposition('a"b\\c/d\r\n.html')).toBe(`inline; filename="a_b_c_d__.html"; filename*=UTF-8''a%22b%5Cc%2Fd%0D%0A.html`);
    expect(contentDisposition(null)).toBe(`inline; filename="attachment"; filename*=UTF-8''attachment`);
    expect(safeContentType('image/png')).toBe('image/png');
    expect(safeContentType('text/plain; charset=utf-8')).toBe('text/plain; charset=utf-8');
    expect(safeContentType('text/html\r\nx-evil: 1')).toBe('application/octet-stream');
    expect(safeContentType(null)).toBe('application/octet-stream');
  });
});

describe('GitHub-compatible API: links point at the copy', () => {
  const copy = 'https://copy.example/fs/github';
  const github = new ApiLinks('https://api.github.com', copy);
  const ghe = new ApiLinks('https://ghe.example.com/api/v3/', copy);

  it('moves URLs of the import\'s API host below the copy, templates and queries included', () => {
    expect(github.rewriteUrl('https://api.github.com/repos/o/r/issues/1')).toBe(`${copy}/repos/o/r/issues/1`);
    expect(github.rewriteUrl('https://api.github.com/repos/o/r/labels{/name}')).toBe(`${copy}/repos/o/r/labels{/name}`);
    expect(github.rewriteUrl('https://api.github.com/users/o/following{/other_user}')).toBe(`${copy}/users/o/following{/other_user}`);
    expect(github.rewriteUrl('https://api.github.com{/x}')).toBe(`${copy}{/x}`);
    expect(github.rewriteUrl('https://api.github.com')).toBe(copy);
    expect(ghe.rewriteUrl('https://ghe.example.com/api/v3/repos/o/r?per_page=1')).toBe(`${copy}/repos/o/r?per_page=1`);
  });

  it('leaves other hosts, longer host names and other paths of the same host', () => {
    for (const url of [
      'https://github.com/o/r/issues/1',
      'https://avatars.githubusercontent.com/u/1?v=4',
      'https://api.github.com.evil.example/repos/o/r',
      'https://api.github.community/x',
      'http://api.github.com/repos/o/r',
      '',
    ]) {
      expect(github.rewriteUrl(url)).toBe(url);
    }
    expect(ghe.rewriteUrl('https://ghe.example.com/o/r/issues/1')).toBe('https://ghe.example.com/o/r/issues/1');
    expect(ghe.rewriteUrl('https://ghe.example.com/api/v30/repos')).toBe('https://ghe.example.com/api/v30/repos');
  });

  it('renders `url` and every `*_url` in nested objects and arrays, keeps `html_url`, bodies and other fields, and rewrites attachments', () => {
    const api = 'https://api.github.com/repos/o/r';
    const attachments = new AttachmentRewriter('imp', [{ url: 'https://github.com/user-attachments/assets/abc', urlKey: KEY_A, filename: 'a.png' }]);
    const value = {
      url: `${api}/pulls/1`,
      html_url: 'https://github.com/o/r/pull/1',
      labels_url: `${api}/issues/1/labels{/name}`,
      body: `see ${api}/issues/2 and ![x](https://github.com/user-attachments/assets/abc)`,
      title: `${api}/not-a-link-field`,
      user: { login: 'o', url: 'https://api.github.com/users/o', html_url: 'https://github.com/o', avatar_url: 'https://avatars.githubusercontent.com/u/1' },
      head: { repo: { url: api, owner: { url: 'https://api.github.com/users/o' } } },
      labels: [{ url: `${api}/labels/bug`, name: 'bug' }],
      assets: [{ url: `${api}/releases/assets/5`, browser_download_url: 'https://github.com/o/r/releases/download/v1/x.tgz' }],
      milestone: null,
      number: 1,
    };
    const rendered = renderLinks(structuredClone(value), { links: github, attachments, base: copy });
    const repo = `${copy}/repos/o/r`;
    expect(rendered).toEqual({
      ...value,
      url: `${repo}/pulls/1`,
      labels_url: `${repo}/issues/1/labels{/name}`,
      body: `see ${api}/issues/2 and ![x](${copy}/attachments/imp/${KEY_A}/a.png)`,
      user: { ...value.user, url: `${copy}/users/o` },
      head: { repo: { url: repo, owner: { url: `${copy}/users/o` } } },
      labels: [{ url: `${repo}/labels/bug`, name: 'bug' }],
      assets: [{ url: `${repo}/releases/assets/5`, browser_download_url: value.assets[0]!.browser_download_url }],
    });
    expect(renderLinks([{ url: `${api}/labels/bug` }], { links: github, base: copy })).toEqual([{ url: `${repo}/labels/bug` }]);
  });

  it('takes FORGESYNC_PUBLIC_URL as the base when set, else the request\'s origin', () => {
    expect(publicBase('https://copy.example/fs', 'http://127.0.0.1:1')).toBe('https://copy.example/fs');
    expect(publicBase(undefined, 'http://127.0.0.1:1')).toBe('http://127.0.0.1:1');
    const parse = (value: string) => serverSettings.publicUrl.parse(value);
    expect(parse('https://copy.example')).toBe('https://copy.example');
    expect(parse('http://copy.example:8080/forgesync')).toBe('http://copy.example:8080/forgesync');
    for (const bad of ['copy.example', 'ftp://copy.example', 'https://copy.example/', 'https://copy.example/?a=1', 'https://copy.example/x#y', 'https://u:p@copy.example']) {
      expect(() => parse(bad), bad).toThrow();
    }
  });
});
