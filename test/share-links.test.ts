import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BodyOf } from './client';
import { createEngine, type Tenant, type TestEngine } from './harness';

/** A request's Host header must never choose where an invitation mail links to. */
let plain: TestEngine;
let configured: TestEngine;
beforeAll(async () => {
  plain = await createEngine();
  configured = await createEngine({ env: { SHARE_BASE_URL: 'https://app.example.com/' } });
});
afterAll(async () => {
  await plain?.close();
  await configured?.close();
});

const EVIL = 'http://evil.example';

async function mails(engine: TestEngine, to: string): Promise<{ text: string; token: string | null }[]> {
  const res = await engine.admin('GET', `/admin/v1/mail?to=${encodeURIComponent(to)}`);
  expect(res.status, res.text).toBe(200);
  return res.body.messages;
}

/** Shares with a forged Host (an absolute URL is what the Node adapter builds from the Host header). */
async function shareFromEvilHost(engine: TestEngine, owner: Tenant, email: string) {
  const res = await engine.request('POST', `${EVIL}/v1/spaces/share`, {
    key: owner.key,
    body: { tag: 'billing', email },
    headers: { host: 'evil.example' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { token: string; share_id: string; share_url: string };
}

describe('share invitation links', () => {
  it('without SHARE_BASE_URL or PUBLIC_URL the mail carries the token and no link, whatever the Host', async () => {
    const owner = await plain.newTenant('starter');
    const email = `to-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const { token, share_id, share_url } = await shareFromEvilHost(plain, owner, email);
    // The answer's link is not built from the Host either: without a configured base or a
    // listening address (this in-process request has none) it is the path alone.
    expect(share_url).toBe(`/join?token=${token}`);
    const rotated = await plain.request<BodyOf<'POST', `/v1/spaces/share/${string}/rotate`>>('POST', `${EVIL}/v1/spaces/share/${share_id}/rotate`, {
      key: owner.key,
      headers: { host: 'evil.example' },
    });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.share_url).not.toContain('evil.example');

    const sent = await mails(plain, email);
    expect(sent.map((m) => m.token).sort()).toEqual([token, rotated.body.token].sort());
    for (const m of sent) {
      expect(m.text).not.toContain('evil.example');
      expect(m.text).not.toMatch(/https?:\/\//);
      expect(m.text).toContain(`POST /v1/spaces/join with {"token": "${m.token}"}`);
    }
  });

  it('with SHARE_BASE_URL the mailed link uses it, never the Host', async () => {
    const owner = await configured.newTenant('starter');
    const email = `to-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const { token, share_url } = await shareFromEvilHost(configured, owner, email);
    expect(share_url).toBe(`https://app.example.com/join?token=${token}`);
    const [mail] = await mails(configured, email);
    expect(mail.text).toContain(`https://app.example.com/join?token=${token}`);
    expect(mail.text).not.toContain('evil.example');
  });
});
