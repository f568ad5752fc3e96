import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { addressLiteral, embeddedIPv4 } from '../../src/egress/address.js';
import { EgressLookupError, EgressRefusedError } from '../../src/egress/errors.js';
import { pinnedRequest, requestFollowingRedirects } from '../../src/egress/http.js';
import { parseNetworks } from '../../src/egress/networks.js';
import { EgressPolicy } from '../../src/egress/policy.js';
import { InvalidInputError } from '../../src/errors.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A server on 127.0.0.1 recording the Host header of each request; `answer` decides the reply. */
async function listen(answer: (path: string) => { status: number; location?: string; body?: string }): Promise<{ port: number; hosts: string[] }> {
  const hosts: string[] = [];
  const server = createServer((req, res) => {
    hosts.push(String(req.headers.host));
    const { status, location, body } = answer(req.url ?? '/');
    res.writeHead(status, location ? { Location: location } : {}).end(body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { port: (server.address() as AddressInfo).port, hosts };
}

const refusedBy = (policy: EgressPolicy, address: string) => policy.refusal(addressLiteral(address)!)?.range;

describe('the default egress policy', () => {
  const policy = new EgressPolicy();

  it.each([
    ['127.0.0.1', '127.0.0.0/8'],
    ['127.255.1.2', '127.0.0.0/8'],
    ['0.0.0.0', '0.0.0.0/8'],
    ['10.1.2.3', '10.0.0.0/8'],
    ['172.16.0.1', '172.16.0.0/12'],
    ['172.31.255.255', '172.16.0.0/12'],
    ['192.168.1.1', '192.168.0.0/16'],
    ['169.254.169.254', '169.254.0.0/16'],
    ['100.64.0.1', '100.64.0.0/10'],
    ['100.100.100.200', '100.64.0.0/10'],
    ['192.0.2.10', '192.0.2.0/24'],
    ['198.18.0.1', '198.18.0.0/15'],
    ['224.0.0.251', '224.0.0.0/4'],
    ['255.255.255.255', '255.255.255.255/32'],
    ['240.0.0.1', '240.0.0.0/4'],
    ['::1', '::1/128'],
    ['::', '::/128'],
    ['fd00::1', 'fc00::/7'],
    ['fc12:3456::1', 'fc00::/7'],
    ['fe80::1', 'fe80::/10'],
    ['ff02::1', 'ff00::/8'],
    ['2001:db8::1', '2001:db8::/32'],
    ['::7f00:1', '::/8'],
  ])('refuses %s (%s)', (address, range) => {
    expect(refusedBy(policy, address)).toBe(range);
  });

  it.each(['140.82.112.3', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:140.82.112.3'])(
    'allows the public address %s',
    (address) => {
      expect(policy.refusal(addressLiteral(address)!)).toBeUndefined();
    },
  );

  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1', 'IPv4-mapped'],
    ['::ffff:7f00:1', '127.0.0.1', 'IPv4-mapped'],
    ['::ffff:0:a9fe:a9fe', '169.254.169.254', 'IPv4-translated'],
    ['64:ff9b::10.0.0.1', '10.0.0.1', 'NAT64'],
    ['2002:c0a8:0101::1', '192.168.1.1', '6to4'],
  ])('checks %s as the IPv4 address it carries (%s, %s)', (address, carried, form) => {
    expect(embeddedIPv4(addressLiteral(address)!.address)).toEqual({ address: carried, form });
    const refusal = policy.refusal(addressLiteral(address)!);
    expect(refusal?.carried).toEqual({ address: carried, form });
    // allowing the IPv4 network allows its IPv6 spellings too
    const allowing = new EgressPolicy({ allowNetworks: [`${carried}/32`] });
    expect(allowing.refusal(addressLiteral(address)!)).toBeUndefined();
  });

  it.each([
    ['0x7f000001', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['017700000001', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0xa9.0xfe.0xa9.0xfe', '169.254.169.254'],
    ['[::1]', '::1'],
    ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
  ])('reads %s as the address %s, never as a name', (host, address) => {
    expect(addressLiteral(host)?.address).toBe(address);
    expect(() => policy.checkLiteral(host)).toThrow(EgressRefusedError);
  });

  it('says what was refused, why and how to allow it, and nothing about ports', () => {
    const error = (() => {
      try {
        policy.checkLiteral('169.254.169.254');
      } catch (caught) {
        return caught as EgressRefusedError;
      }
      throw new Error('not refused');
    })();
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ host: '169.254.169.254', address: '169.254.169.254', range: '169.254.0.0/16' });
    expect(error.message).toMatch(/refusing to connect to 169\.254\.169\.254: it is in 169\.254\.0\.0\/16 \(link-local: cloud metadata/);
    expect(error.message).toMatch(/add 169\.254\.169\.254 \(or 169\.254\.0\.0\/16\) to allowNetworks \(FORGESYNC_ALLOW_NETWORKS\)/);
    expect(error.message).not.toMatch(/port/i);
  });

  it('leaves names to connection time: checkLiteral looks nothing up', () => {
    let looked = 0;
    const counting = new EgressPolicy({ lookup: async () => (looked++, []) });
    expect(counting.checkLiteral('github.com')).toBeUndefined();
    expect(counting.checkLiteral('localhost')).toBeUndefined();
    expect(looked).toBe(0);
  });
});

describe('allowNetworks', () => {
  it('opens only the networks listed, each family on its own', () => {
    const policy = new EgressPolicy({ allowNetworks: parseNetworks('10.20.0.0/16, fd00:1::/64,127.0.0.1') });
    expect(policy.allowNetworks).toEqual(['10.20.0.0/16', 'fd00:1::/64', '127.0.0.1/32']);
    expect(refusedBy(policy, '10.20.3.4')).toBeUndefined();
    expect(refusedBy(policy, '10.21.0.1')).toBe('10.0.0.0/8');
    expect(refusedBy(policy, 'fd00:1::5')).toBeUndefined();
    expect(refusedBy(policy, 'fd00:2::5')).toBe('fc00::/7');
    expect(refusedBy(policy, '127.0.0.1')).toBeUndefined();
    expect(refusedBy(policy, '127.0.0.2')).toBe('127.0.0.0/8');
    // an IPv6 allowance never opens IPv4 (a BlockList would read 8.8.8.8 as ::ffff:8.8.8.8)
    expect(refusedBy(new EgressPolicy({ allowNetworks: ['::/0'] }), '10.0.0.1')).toBe('10.0.0.0/8');
  });

  it.each([['10.0.0.0/33'], ['fd00::/129'], ['example.com'], ['10.0.0/8'], [''], [' , ']])('refuses %j with a message', (value) => {
    expect(() => parseNetworks(value)).toThrow(/CIDR|at most/);
  });

  it('takes an array from the config file', () => {
    expect(parseNetworks(['192.168.0.0/16', '[::1]'])).toEqual(['192.168.0.0/16', '::1/128']);
  });
});

describe('EgressPolicy.resolve', () => {
  const names: Record<string, string[]> = {
    'public.example': ['140.82.112.3', '2606:4700::1111'],
    'mixed.example': ['140.82.112.3', '10.0.0.7'],
    'git.forgesync.test': ['127.0.0.1'],
  };
  const lookup = async (host: string) => {
    const addresses = names[host];
    if (!addresses) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return addresses.map((address) => addressLiteral(address)!);
  };

  it('answers every address of a name, each checked', async () => {
    const policy = new EgressPolicy({ lookup });
    expect(await policy.resolve('Public.Example')).toEqual({
      host: 'public.example',
      addresses: [
        { address: '140.82.112.3', family: 4 },
        { address: '2606:4700::1111', family: 6 },
      ],
    });
  });

  it('refuses a name if any of its addresses is refused, naming the name and the address', async () => {
    const error = await new EgressPolicy({ lookup }).resolve('mixed.example').then(() => undefined, (e: Error) => e);
    expect(error).toBeInstanceOf(EgressRefusedError);
    expect(error?.message).toMatch(/refusing to connect to mixed\.example: it resolves to 10\.0\.0\.7, which is in 10\.0\.0\.0\/8/);
  });

  it('refuses localhost through the system resolver', async () => {
    await expect(new EgressPolicy().resolve('localhost')).rejects.toThrow(/refusing to connect to localhost: it resolves to (127\.0\.0\.1|::1)/);
  });

  it('looks up no address literal, and fails a name that does not resolve clearly', async () => {
    let looked = 0;
    const policy = new EgressPolicy({ lookup: async (host) => (looked++, lookup(host)) });
    expect(await policy.resolve('[2606:4700::1111]')).toEqual({ host: '2606:4700::1111', addresses: [{ address: '2606:4700::1111', family: 6 }] });
    expect(looked).toBe(0);
    const error = await policy.resolve('nowhere.example').then(() => undefined, (e: Error) => e);
    expect(error).toBeInstanceOf(EgressLookupError);
    expect(error?.message).toMatch(/cannot resolve nowhere\.example \(ENOTFOUND\)/);
  });
});

describe('pinnedRequest', () => {
  it('connects to the checked address of a name, which the system resolver does not know', async () => {
    const { port, hosts } = await listen(() => ({ status: 200, body: 'hello' }));
    const policy = new EgressPolicy({ allowNetworks: ['127.0.0.0/8'], lookup: async () => [{ address: '127.0.0.1', family: 4 }] });
    const response = await pinnedRequest(new URL(`http://git.forgesync.test:${port}/x`), { policy });
    expect(response).toMatchObject({ status: 200, target: { host: 'git.forgesync.test', addresses: [{ address: '127.0.0.1', family: 4 }] } });
    expect(response.body.toString()).toBe('hello');
    expect(hosts).toEqual([`git.forgesync.test:${port}`]);
  });

  it('sends nothing to a refused address, open port or not', async () => {
    const { port, hosts } = await listen(() => ({ status: 200 }));
    const policy = new EgressPolicy();
    const open = await pinnedRequest(new URL(`http://127.0.0.1:${port}/`), { policy }).then(() => 'sent', (e: Error) => e.message);
    const closed = await pinnedRequest(new URL('http://127.0.0.1:9/'), { policy }).then(() => 'sent', (e: Error) => e.message);
    expect(open).toMatch(/refusing to connect to 127\.0\.0\.1/);
    expect(closed).toBe(open);
    expect(hosts).toEqual([]);
  });

  it('follows redirects hop by hop, checking each target first, with headers per hop', async () => {
    const seen: string[] = [];
    const target = await listen((path) => (seen.push(path), { status: 200, body: 'there' }));
    const hop = await listen(() => ({ status: 302, location: `http://127.0.0.1:${target.port}/final` }));
    const policy = new EgressPolicy({ allowNetworks: ['127.0.0.0/8'] });
    const origins: string[] = [];
    const response = await requestFollowingRedirects(new URL(`http://127.0.0.1:${hop.port}/start`), {
      policy,
      headers: (url) => (origins.push(url.origin), {}),
    });
    expect(response.url.href).toBe(`http://127.0.0.1:${target.port}/final`);
    expect(origins).toEqual([`http://127.0.0.1:${hop.port}`, `http://127.0.0.1:${target.port}`]);
    expect(seen).toEqual(['/final']);

    const toMetadata = await listen(() => ({ status: 302, location: 'http://169.254.169.254/latest/meta-data/' }));
    await expect(requestFollowingRedirects(new URL(`http://127.0.0.1:${toMetadata.port}/`), { policy })).rejects.toThrow(
      /refusing to connect to 169\.254\.169\.254/,
    );
  });
});
