import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwardedClient } from '../shared/node/client-ip';
import { parseConfig } from '../shared/platform/contract/config';
import { createEngine, freshIp, type TestEngine, uniqueEmail } from './harness';

/** TRUST_PROXY counts proxy hops from the right of X-Forwarded-For; what the client wrote is never trusted. */
describe('client address behind reverse proxies', () => {
  let oneProxy: TestEngine;
  let twoProxies: TestEngine;
  beforeAll(async () => {
    oneProxy = await createEngine({ env: { TRUST_PROXY: '1' } });
    twoProxies = await createEngine({ env: { TRUST_PROXY: '2' } });
  });
  afterAll(async () => {
    await oneProxy?.close();
    await twoProxies?.close();
  });

  const signup = (engine: TestEngine, xff: string) =>
    engine.request('POST', '/v1/keys', { body: { email: uniqueEmail('xff') }, headers: { 'x-forwarded-for': xff } });

  it('an appending proxy: a forged left-most entry does not get around the signup limit', async () => {
    const client = freshIp();
    const statuses: number[] = [];
    // The client sends its own X-Forwarded-For with a new forged address each time; the proxy appends the real one.
    for (let i = 0; i < 4; i++) statuses.push((await signup(oneProxy, `${freshIp()}, ${client}`)).status);
    expect(statuses).toEqual([201, 201, 429, 429]);
  });

  it('two proxies: the entry two hops from the right is the client', async () => {
    const client = freshIp();
    const proxy = freshIp();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await signup(twoProxies, `${freshIp()}, ${client}, ${proxy}`)).status);
    expect(statuses).toEqual([201, 201, 429]);
  });

  it('picks by hop count, and falls back to the socket for garbage', () => {
    expect(forwardedClient('198.51.100.7, 203.0.113.9', 1)).toBe('203.0.113.9');
    expect(forwardedClient('198.51.100.7, 203.0.113.9', 2)).toBe('198.51.100.7');
    expect(forwardedClient('203.0.113.9', 3)).toBe('203.0.113.9'); // fewer entries than hops: the left-most
    expect(forwardedClient(' 2001:db8::1 ,2001:db8::2 ', 1)).toBe('2001:db8::2');
    expect(forwardedClient('203.0.113.9, not-an-ip', 1)).toBeNull();
    expect(forwardedClient('203.0.113.9', 0)).toBeNull();
    expect(forwardedClient(undefined, 1)).toBeNull();
  });

  it('TRUST_PROXY takes 0/1/true/false or a hop count', () => {
    expect(parseConfig({}).TRUST_PROXY).toBe(0);
    expect(parseConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(1);
    expect(parseConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(0);
    expect(parseConfig({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    expect(() => parseConfig({ TRUST_PROXY: 'yes' })).toThrow(/TRUST_PROXY/);
  });
});
