import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockedRange, destinationProblem, dohResolver } from '../shared/platform/http/outbound';

/**
 * The outbound address rule on its own, and the DNS-over-HTTPS resolver Workers use, against a
 * local stand-in speaking the JSON API of cloudflare-dns.com / dns.google.
 */
let server: Server;
let endpoint = '';
const zone: Record<string, { A?: string[]; AAAA?: string[] }> = {
  'public.test': { A: ['93.184.216.34'], AAAA: ['2606:2800:220:1::248'] },
  'rebound.test': { A: ['93.184.216.34'], AAAA: ['::1'] },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const name = url.searchParams.get('name') ?? '';
    const type = url.searchParams.get('type') as 'A' | 'AAAA';
    const answers = (zone[name]?.[type] ?? []).map((data) => ({ name, type: type === 'A' ? 1 : 28, TTL: 60, data }));
    // A CNAME in the answer section (type 5) must be skipped, not taken for an address.
    const body = { Status: zone[name] ? 0 : 3, Answer: answers.length ? [{ name, type: 5, TTL: 60, data: 'alias.test.' }, ...answers] : undefined };
    res.writeHead(200, { 'content-type': 'application/dns-json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dns-query`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('outbound address rule', () => {
  it('names the range of every address that may not be called, and passes public unicast', () => {
    expect(blockedRange('8.8.8.8')).toBeNull();
    expect(blockedRange('2606:4700::1111')).toBeNull();
    for (const [ip, range] of [
      ['127.0.0.1', 'loopback'],
      ['::1', 'loopback'],
      ['10.0.0.1', 'private'],
      ['172.16.5.4', 'private'],
      ['192.168.0.1', 'private'],
      ['169.254.169.254', 'linkLocal'],
      ['100.100.100.200', 'carrierGradeNat'],
      ['fd00:ec2::254', 'uniqueLocal'],
      ['::ffff:10.0.0.1', 'private'],
      ['0.0.0.0', 'unspecified'],
      ['224.0.0.1', 'multicast'],
    ]) {
      expect(blockedRange(ip), ip).toBe(range);
    }
  });

  it('refuses IPv6 forms that carry a loopback or private IPv4 address, and passes those that carry a public one', async () => {
    const resolveHost = dohResolver(endpoint);
    for (const [ip, range] of [
      ['::127.0.0.1', 'loopback'], // IPv4-compatible, as a DNS answer may write it
      ['::7f00:1', 'loopback'], // the same, as WHATWG URL normalizes [::127.0.0.1]
      ['::a00:1', 'private'],
      ['::a9fe:a9fe', 'linkLocal'],
      ['::ffff:7f00:1', 'loopback'], // IPv4-mapped
      ['::ffff:0:7f00:1', 'loopback'], // IPv4-translated
      ['64:ff9b::7f00:1', 'loopback'], // NAT64, well-known prefix
      ['64:ff9b::a9fe:a9fe', 'linkLocal'],
      ['2002:7f00:1::', 'loopback'], // 6to4
      ['2002:c0a8:101::1', 'private'],
      ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // Teredo client 127.0.0.1, stored inverted
    ]) {
      expect(blockedRange(ip), ip).toBe(range);
    }
    // Written in IPv6, a public IPv4 address is that address; the translation ranges stay refused.
    expect(blockedRange('::808:808')).toBeNull();
    expect(blockedRange('::ffff:8.8.8.8')).toBeNull();
    expect(blockedRange('64:ff9b::808:808')).toBe('rfc6052');
    expect(blockedRange('2002:808:808::1')).toBe('6to4');
    for (const url of [
      'https://[::127.0.0.1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[64:ff9b::127.0.0.1]/',
      'https://[::10.1.2.3]:8443/x',
      'https://[2002:7f00:1::]/',
    ]) {
      expect(await destinationProblem(url, { allowInsecure: false, resolveHost }), url).toMatch(/loopback|private/);
    }
  });

  it('resolves A and AAAA over DNS-over-HTTPS and refuses a name with any private address', async () => {
    const resolveHost = dohResolver(endpoint);
    expect((await resolveHost('public.test')).sort()).toEqual(['2606:2800:220:1::248', '93.184.216.34']);
    expect(await destinationProblem('https://public.test/hook', { allowInsecure: false, resolveHost })).toBeNull();
    expect(await destinationProblem('https://rebound.test/hook', { allowInsecure: false, resolveHost })).toMatch(/loopback/);
    expect(await destinationProblem('https://missing.test/hook', { allowInsecure: false, resolveHost })).toMatch(/does not resolve/);
  });

  it('lifts both rules only with allowInsecure', async () => {
    const resolveHost = dohResolver(endpoint);
    expect(await destinationProblem('http://127.0.0.1:9/hook', { allowInsecure: false, resolveHost })).toMatch(/https/);
    expect(await destinationProblem('http://127.0.0.1:9/hook', { allowInsecure: true, resolveHost })).toBeNull();
    expect(await destinationProblem('ftp://public.test/', { allowInsecure: true, resolveHost })).toMatch(/https/);
  });
});
