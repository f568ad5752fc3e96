import { describe, expect, it } from 'vitest';
import { FileHosts, filesIn, releaseAssetEndpoint } from '../../src/importer/attachments/scan.js';

const allows = (hosts: FileHosts, url: string) => hosts.allows(new URL(url));

describe('attachment downloads: https only, http only when the import itself is', () => {
  it('an https import downloads its files over https only: an http:// link to the API or web host is left as a link', () => {
    const hosts = new FileHosts('https://ghe.example.com/api/v3', 'https://ghe.example.com/acme/widgets');
    expect(allows(hosts, 'https://ghe.example.com/user-attachments/assets/x.png')).toBe(true);
    expect(allows(hosts, 'https://objects.githubusercontent.com/x')).toBe(true);
    for (const url of [
      'http://ghe.example.com/user-attachments/assets/x.png',
      'http://ghe.example.com:80/user-attachments/assets/x.png',
      'http://ghe.example.com:443/user-attachments/assets/x.png',
      'http://objects.githubusercontent.com/x',
      'http://user-images.githubusercontent.com/1/x.png',
      'ftp://ghe.example.com/x.png',
    ]) {
      expect(allows(hosts, url), url).toBe(false);
    }
    // Also when the web host is learnt later, or the API names an http web URL.
    const later = new FileHosts('https://api.example.com');
    later.addWebUrl('http://web.example.com/acme/widgets');
    expect(allows(later, 'https://web.example.com/acme/widgets/files/1/a.zip')).toBe(true);
    expect(allows(later, 'http://web.example.com/acme/widgets/files/1/a.zip')).toBe(false);
  });

  it('reports the http:// link of an https project as an attachment left behind, not one to download', () => {
    const hosts = new FileHosts('https://api.github.com', 'https://github.com/acme/widgets');
    const body = '![shot](http://api.github.com/user-attachments/assets/x.png) and ![ok](https://github.com/user-attachments/assets/y)';
    expect(filesIn(body, hosts)).toEqual([
      { url: 'http://api.github.com/user-attachments/assets/x.png', kind: 'attachment', allowed: false },
      { url: 'https://github.com/user-attachments/assets/y', kind: 'attachment', allowed: true },
    ]);
  });

  it('an http import (FORGESYNC_GIT_PROTOCOLS lists http) downloads over http from its API and web origins only', () => {
    const hosts = new FileHosts('http://127.0.0.1:3000/api/v3', 'http://127.0.0.1:3001/acme/widgets');
    expect(allows(hosts, 'http://127.0.0.1:3000/x')).toBe(true);
    expect(allows(hosts, 'http://127.0.0.1:3001/user-attachments/assets/x')).toBe(true);
    expect(allows(hosts, 'https://127.0.0.1:3001/user-attachments/assets/x')).toBe(true);
    for (const url of ['http://127.0.0.1/x', 'http://127.0.0.1:3002/x', 'http://objects.githubusercontent.com/x', 'http://localhost:3001/x']) {
      expect(allows(hosts, url), url).toBe(false);
    }
    // A web URL the API gives as https stays https only.
    const tls = new FileHosts('http://127.0.0.1:3000/api/v3', 'https://127.0.0.1:3001/acme/widgets');
    expect(allows(tls, 'http://127.0.0.1:3001/x')).toBe(false);
    expect(allows(tls, 'https://127.0.0.1:3001/x')).toBe(true);
  });

  it('a release asset may follow the API asset endpoint\'s redirect to GitHub\'s release storage, over https only; an attachment may not', () => {
    const hosts = new FileHosts('https://api.github.com', 'https://github.com/acme/widgets');
    for (const url of [
      'https://release-assets.githubusercontent.com/github-production-release-asset/1/x?sig=1',
      'https://objects.githubusercontent.com/github-production-release-asset-2e65be/1/x',
      'https://github-production-release-asset-2e65be.s3.amazonaws.com/1/x',
      'https://api.github.com/repos/acme/widgets/releases/assets/1',
    ]) {
      expect(hosts.allowsReleaseAsset(new URL(url)), url).toBe(true);
    }
    expect(allows(hosts, 'https://release-assets.githubusercontent.com/x')).toBe(false);
    expect(allows(hosts, 'https://github-production-release-asset-2e65be.s3.amazonaws.com/x')).toBe(false);
    for (const url of ['http://release-assets.githubusercontent.com/x', 'https://evil.s3.amazonaws.com/x', 'https://example.com/x']) {
      expect(hosts.allowsReleaseAsset(new URL(url)), url).toBe(false);
    }
    expect(releaseAssetEndpoint('https://ghe.example.com/api/v3', '/repos/acme/widgets', 80000001)).toBe('https://ghe.example.com/api/v3/repos/acme/widgets/releases/assets/80000001');
    for (const id of ['1', -1, 1.5, null, undefined]) expect(releaseAssetEndpoint('https://api.github.com', '/repos/a/b', id)).toBeUndefined();
  });
});
