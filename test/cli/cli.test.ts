import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integration, uniqueEmail } from '../harness';
import { type ServerProcess, startServer, stopServer } from '../server-process';
import { buildCliIfStale, cliMain, runCli } from './cli-process';

/** The built `engram` binary against a real server process: what a person at a terminal runs. */
const ADMIN = 'cli-test-admin-token-0123456789';
let server: ServerProcess;
let dir: string;
let key: string;
/** The environment of a logged-in person: only the config directory (the key and URL are in it). */
let env: Record<string, string>;

const cli = (args: string[], extra: Record<string, string> = {}) => runCli(args, { ...env, ...extra });

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.status, `${method} ${path}`).toBeLessThan(300);
  return (await res.json()) as T;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'engram-cli-'));
  const storage: Record<string, string> = integration.databaseUrl
    ? { DATABASE_URL: integration.databaseUrl, REDIS_URL: integration.redisUrl ?? '' }
    : { DATA_DIR: join(dir, 'data') };
  [server] = await Promise.all([
    startServer({ ADMIN_TOKEN: ADMIN, EMBEDDING_PROVIDER: 'hash', IMPORT_INLINE_MAX_LINES: '30', ...storage }, { timeoutMs: 60_000 }),
    buildCliIfStale(),
  ]);
  env = { XDG_CONFIG_HOME: join(dir, 'config') };
}, 240_000);

afterAll(async () => {
  if (server) await stopServer(server);
  await rm(dir, { recursive: true, force: true });
});

describe('engram CLI', () => {
  it('creates a Pro account as the operator, and logs in: the key lands in a 0600 file and is never printed', async () => {
    const noToken = await cli(['admin', 'tenants', 'create', '--email', uniqueEmail('cli'), '--url', server.base]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('ENGRAM_ADMIN_TOKEN');

    const created = await cli(['admin', 'tenants', 'create', '--email', uniqueEmail('cli'), '--tier', 'pro', '--url', server.base, '--json'], {
      ENGRAM_ADMIN_TOKEN: ADMIN,
    });
    expect(created.code, created.stderr).toBe(0);
    const tenant = JSON.parse(created.stdout) as { api_key: string; tier: string };
    expect(tenant.tier).toBe('pro');
    key = tenant.api_key;
    expect(created.stdout + created.stderr).not.toContain(ADMIN);

    const login = await cli(['login', '--api-key', key, '--url', server.base]);
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain('Logged in');
    expect(login.stdout + login.stderr).not.toContain(key);
    const file = join(env.XDG_CONFIG_HOME, 'engram', 'config.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ url: server.base, api_key: key });
  });

  it('remembers, finds it with search --json (exactly the API body), lists it in a table', async () => {
    const stored = await cli(['remember', 'The user prefers invoices in EUR.', '--tags', 'billing,prefs', '--agent', 'billing-agent']);
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stdout).toMatch(/Stored urn:uuid:/);

    const found = await cli(['search', 'invoices in EUR', '--mode', 'keyword', '--limit', '3', '--json']);
    expect(found.code, found.stderr).toBe(0);
    const body = JSON.parse(found.stdout) as { mode: string; memories: { observation: string; tags: string[] }[] };
    expect(body.mode).toBe('keyword');
    expect(body.memories[0]).toMatchObject({ observation: 'The user prefers invoices in EUR.', tags: ['billing', 'prefs'] });
    expect(found.stderr).toBe('');

    const listed = await cli(['list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^CREATED\s+ID\s+TAGS\s+OBSERVATION$/);
    expect(listed.stdout).toContain('The user prefers invoices in EUR.');
    expect(listed.stdout).not.toContain('\u001b['); // no colours off a terminal
  });

  it('exports to a file (--out or -o) with a progress line on stderr, and imports JSONL through POST /v1/import, followed as a job', async () => {
    const out = join(dir, 'memories.json');
    const exported = await cli(['export', '--format', 'json', '--out', out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/\d+(\.\d)? (B|KiB), 1 record written to/);
    const rows = JSON.parse(await readFile(out, 'utf8')) as { observation: string }[];
    expect(rows.map((r) => r.observation)).toEqual(['The user prefers invoices in EUR.']);
    const short = join(dir, 'memories-o.json');
    const withO = await cli(['export', '--format', 'json', '-o', short]);
    expect(withO.code, withO.stderr).toBe(0);
    expect(await readFile(short, 'utf8')).toBe(await readFile(out, 'utf8'));

    // 150 lines: past this server's inline limit (30), so a job stores them and the command follows it.
    const jsonl = join(dir, 'more.jsonl');
    const lines = Array.from({ length: 150 }, (_, i) => JSON.stringify({ observation: `Imported fact number ${i}`, tags: ['imported'] }));
    await writeFile(jsonl, `${lines.join('\n')}\n`);
    const imported = await cli(['import', jsonl]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toContain('150 of 150 records done');
    expect(imported.stdout).toContain('stored 150 memory');
    const listed = await cli(['list', '--tags', 'imported', '--limit', '1', '--json']);
    expect((JSON.parse(listed.stdout) as { total: number }).total).toBe(150);
  });

  it('imports the same file twice as once, whatever its detected format (JSONL, a JSON array, a mem0 export)', async () => {
    const total = async (tag: string) => (JSON.parse((await cli(['list', '--tags', tag, '--limit', '1', '--json'])).stdout) as { total: number }).total;
    const files = {
      jsonl: [join(dir, 'twice.jsonl'), ['a', 'b', 'c'].map((x) => JSON.stringify({ observation: `Twice JSONL ${x}`, tags: ['twice-jsonl'] })).join('\n')],
      array: [
        join(dir, 'twice.json'),
        JSON.stringify(
          [1, 2].map((x) => ({ observation: `Twice array ${x}`, tags: ['twice-array'] })),
          null,
          2,
        ),
      ],
      mem0: [
        join(dir, 'twice-mem0.json'),
        JSON.stringify({ results: [{ id: 'm-1', memory: 'Twice mem0 one', categories: ['twice-mem0'], user_id: 'u1' }] }, null, 2),
      ],
    } as const;
    const expected = { jsonl: 3, array: 2, mem0: 1 };
    for (const [kind, [file, text]] of Object.entries(files)) {
      await writeFile(file, text);
      const first = await cli(['import', file, '--json']);
      expect(first.code, first.stderr).toBe(0);
      const summary = JSON.parse(first.stdout) as { format: string; stored: { memory: number }; already_imported: number };
      expect(summary.format).toBe(kind === 'mem0' ? 'mem0' : 'jsonl');
      expect(summary.stored.memory).toBe(expected[kind as keyof typeof expected]);
      const again = await cli(['import', file]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain(`stored nothing; ${expected[kind as keyof typeof expected]} already imported`);
      expect(await total(`twice-${kind}`)).toBe(expected[kind as keyof typeof expected]);
    }
  });

  it('imports the good lines of a file with bad ones, reporting each bad line by number (exit 1); a missing or unreadable file is exit 2', async () => {
    const file = join(dir, 'one-bad.jsonl');
    const lines = [
      JSON.stringify({ observation: 'Partly good line one', tags: ['partly'] }),
      '{"observation": "cut off',
      JSON.stringify({ tags: ['partly'] }),
      JSON.stringify({ observation: 'Partly good line four', tags: ['partly'] }),
    ];
    await writeFile(file, lines.join('\n'));
    const imported = await cli(['import', file]);
    expect(imported.code).toBe(1);
    expect(imported.stdout).toContain('stored 2 memory');
    expect(imported.stderr).toContain('line 2: INVALID_JSON');
    expect(imported.stderr).toContain('line 3: INVALID_RECORD');
    expect(imported.stderr).toContain('2 lines of');
    expect(imported.stderr).not.toMatch(/\bat \w+ \(|Error:/); // no stack
    const listed = await cli(['list', '--tags', 'partly', '--json']);
    expect((JSON.parse(listed.stdout) as { memories: { observation: string }[] }).memories.map((m) => m.observation).sort()).toEqual([
      'Partly good line four',
      'Partly good line one',
    ]);

    // A JSON array export with a damaged record is read line by line: the damaged line is refused by its number.
    const damaged = join(dir, 'damaged-export.json');
    const records = ['Damaged export one', 'Damaged export three'].map((o) => JSON.stringify({ observation: o, tags: ['damaged'] }));
    await writeFile(damaged, `[\n${records[0]},\n{"observation": oops},\n${records[1]}\n]\n`);
    const partly = await cli(['import', damaged]);
    expect(partly.code).toBe(1);
    expect(partly.stderr).toContain('read line by line');
    expect(partly.stderr).toContain('line 3: INVALID_JSON');
    expect(partly.stdout).toContain('stored 2 memory');

    const missing = await cli(['import', join(dir, 'no-such-file.jsonl')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`engram: ${join(dir, 'no-such-file.jsonl')}: no such file\n`);
    expect((await cli(['import', dir])).code).toBe(2); // a directory
    const prose = join(dir, 'notes.txt');
    await writeFile(prose, 'just some notes\n');
    const notJson = await cli(['import', prose]);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain('is not JSON');
  });

  it('ends quietly with exit 0 when the reader closes the pipe (`engram --json list | true`)', async () => {
    for (const args of ['--json list --limit 100', 'export --format json']) {
      // PIPESTATUS[0] is engram's own exit code; `true` exits before engram writes a byte.
      const script = `"${process.execPath}" "${cliMain}" ${args} | true; echo "exit=\${PIPESTATUS[0]}"`;
      const run = await runCli([], env, { shell: script });
      expect(run.stdout, args).toBe('exit=0\n');
      expect(run.stderr, args).toBe('');
    }
  });

  it('exports the account as a bundle and imports it with --format bundle: a dry run, then once', async () => {
    const bundle = join(dir, 'account.jsonl');
    const exported = await cli(['export', '--bundle', '--out', bundle]);
    expect(exported.code, exported.stderr).toBe(0);
    const lines = (await readFile(bundle, 'utf8')).trimEnd().split('\n');
    expect(JSON.parse(lines[0]).format).toBe('engram-bundle');
    expect(JSON.parse(lines.at(-1)!).type).toBe('trailer');

    // The same account: every memory in the bundle was stored by this account, not imported, so it is stored again once.
    const dry = await cli(['import', bundle, '--format', 'bundle', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/^Dry run: .+ \d+ records would be stored; 0 already imported/);
    const first = await cli(['import', bundle, '--format', 'bundle', '--json']);
    expect(first.code, first.stderr).toBe(0);
    const summary = JSON.parse(first.stdout.split('\n')[0]) as { stored: { memory: number } };
    expect(summary.stored.memory).toBeGreaterThan(0);
    const again = await cli(['import', bundle]); // detected by its header line
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('an engram bundle');
    expect(again.stdout).toContain('stored nothing');
  });

  it('follows an import the server stores by a job (this server: past 30 lines) until it completes, or not with --no-wait', async () => {
    const file = join(dir, 'many.jsonl');
    const lines = (tag: string) => Array.from({ length: 60 }, (_, i) => JSON.stringify({ observation: `CLI job import ${tag} ${i}` })).join('\n');
    await writeFile(file, lines('a'));
    const followed = await cli(['import', file, '--format', 'jsonl']);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toContain('stored 60 memory');
    await writeFile(file, lines('b'));
    const left = await cli(['import', file, '--format', 'jsonl', '--no-wait']);
    expect(left.code, left.stderr).toBe(0);
    expect(left.stdout).toMatch(/Import imp_\w+ accepted: 60 records to store/);
  });

  it('previews a rollback, and refuses one without --yes off a terminal (exit 2)', async () => {
    const { server_time_utc: t } = await api<{ server_time_utc: string }>('GET', '/v1/context/now');
    expect((await cli(['remember', 'The user prefers invoices in USD.'])).code).toBe(0);

    const preview = await cli(['rollback', '--to', t, '--preview']);
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toContain('1 removed');

    const refused = await cli(['rollback', '--to', t]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--yes');

    const done = await cli(['rollback', '--to', t, '--yes', '--json']);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ success: true, operations_undone: 1 });

    const verified = await cli(['audit', 'verify']);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^valid: \d+ audit entries/);
  });

  it('tails the audit log and the live event stream as JSON lines, and for people with the ids and tags of each event', async () => {
    const audit = await cli(['audit', 'tail', '--no-follow', '--limit', '2', '--json']);
    expect(audit.code, audit.stderr).toBe(0);
    const entries = audit.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { seq: number; operation: string });
    expect(entries).toHaveLength(2);
    expect(entries[0].seq).toBeLessThan(entries[1].seq); // oldest first, as a tail reads

    // A follower never ends by itself: stop it once the stored events are out.
    const events = await runCli(['events', 'tail', '--after', '0', '--types', 'memory.created', '--json'], env, { timeoutMs: 5_000 });
    expect(events.code).toBeNull(); // still following when stopped
    const types = events.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { type: string }).type);
    expect(types.length).toBeGreaterThan(0);
    expect(new Set(types)).toEqual(new Set(['memory.created']));

    // For people: each event with the ids and tags it is about.
    const lines = await runCli(['events', 'tail', '--after', '0', '--types', 'memory.created'], env, { timeoutMs: 5_000 });
    const eur = lines.stdout.split('\n').find((line) => line.includes('[billing, prefs]'));
    expect(eur, `${lines.stdout}\n${lines.stderr}`).toBeDefined();
    expect(eur).toMatch(/^#\d+ {2}\S+ {2}memory\.created {2}urn:uuid:[\w-]+ .*\[billing, prefs\]$/);
  });

  it('verifies a trace certificate offline: exit 0 when good, 1 with the reason when tampered or not a certificate, 2 when not JSON', async () => {
    const { trace_id } = await api<{ trace_id: string }>('POST', '/v1/traces', { agent_id: 'cli-agent', description: 'Plan the invoice run' });
    await api('POST', `/v1/traces/${trace_id}/steps`, { type: 'THOUGHT', content: 'Invoices go out in EUR' });
    await api('POST', `/v1/traces/${trace_id}/complete`);
    const certificate = await api<{ steps: { integrity_hash: string }[] }>('GET', `/v1/traces/${trace_id}/certificate`);
    const good = join(dir, 'cert.json');
    await writeFile(good, JSON.stringify(certificate));

    // No key and no server needed: an empty config directory.
    const offline = { XDG_CONFIG_HOME: join(dir, 'nobody'), ENGRAM_URL: 'http://127.0.0.1:9' };
    const valid = await runCli(['trace', 'verify', good], offline);
    expect(valid.code, valid.stderr).toBe(0);
    expect(valid.stdout).toContain(`valid: trace ${trace_id}`);

    // A step whose content changed hashes differently: its integrity hash no longer chains to the signed root.
    certificate.steps[0].integrity_hash = createHash('sha256').update('Invoices go out in USD').digest('hex');
    const tampered = join(dir, 'cert-tampered.json');
    await writeFile(tampered, JSON.stringify(certificate));
    const invalid = await runCli(['trace', 'verify', tampered], offline);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^invalid: step 0: chain_hash is not/);

    expect((await runCli(['trace', 'verify', join(dir, 'missing.json')], offline)).code).toBe(2);

    // JSON that is no certificate (or receipt) at all: invalid with a reason people read, exit 1; not JSON: exit 2.
    const other = join(dir, 'not-a-certificate.json');
    const pem = join(dir, 'public.pem');
    await writeFile(pem, (await api<{ public_key: string }>('GET', '/v1/traces/public-key')).public_key);
    for (const [text, code, message] of [
      ['{"hello": "world"}', 1, /^invalid: not an? (trace certificate|erasure receipt): /],
      ['null', 1, /^invalid: not an? (trace certificate|erasure receipt): /],
      ['[1, 2', 2, /^engram: .+ is not JSON, so not an? (trace certificate|erasure receipt)\n$/],
    ] as const) {
      await writeFile(other, text);
      for (const args of [
        ['trace', 'verify', other],
        ['erasure', 'verify', other, '--public-key', pem],
      ]) {
        const run = await runCli(args, offline);
        expect(run.code, `${args[0]} ${text}`).toBe(code);
        expect(run.stderr).toMatch(message);
        expect(run.stderr).not.toMatch(/TypeError|\bat \w+/);
      }
    }
  });

  it('lists a held action in the approval queue and approves it after the solo wait; denies another', async () => {
    await api('POST', '/v1/control/policies', {
      name: 'HoldNewsletters',
      rules: [{ match: 'newsletter', severity: 'high', on_violation: 'require_approval', reason: 'A newsletter needs a person' }],
    });
    // The agent submits with its own key: the key that submits an action never decides it.
    const agent = await api<{ api_key: string }>('POST', '/v1/keys/restricted', { name: 'mailer', scopes: ['actions:write'] });
    const submit = async () => {
      const res = await fetch(`${server.base}/v1/actions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agent.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ action: 'mail.send', params: { subject: 'November newsletter' } }),
      });
      return (await res.json()) as { action_id: string; status: string };
    };
    const first = await submit();
    const second = await submit();
    expect(first.status).toBe('pending_review');
    const submittedAt = Date.now();

    // Solo mode: a decision comes no sooner than 5 s after submission; before, it is refused (exit 1),
    // not waited out. Asked first, so that one CLI start (slow on a loaded machine) fits in the 5 s.
    const early = await cli(['approve', first.action_id, '--reason', 'too soon']);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/^CONFLICT: Solo mode.*; retry after [1-5] seconds? \(req_/);
    expect(early.stderr).not.toContain('retry_after');

    const queue = await cli(['approvals', '--json']);
    expect(queue.code, queue.stderr).toBe(0);
    const ids = (JSON.parse(queue.stdout) as { approvals: { approval_id: string }[] }).approvals.map((a) => a.approval_id);
    expect(ids).toEqual(expect.arrayContaining([first.action_id, second.action_id]));
    const table = await cli(['approvals']);
    expect(table.stdout).toContain(first.action_id);
    await new Promise((r) => setTimeout(r, Math.max(0, submittedAt + 5_500 - Date.now())));

    const approved = await cli(['approve', first.action_id, '--reason', 'checked the list']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toBe(`${first.action_id}: approved\n`);
    const denied = await cli(['deny', second.action_id, '--reason', 'not this month', '--json']);
    expect(denied.code, denied.stderr).toBe(0);
    expect(JSON.parse(denied.stdout)).toMatchObject({ status: 'denied', reason: 'not this month' });
  }, 30_000);

  it('answers an API error with exit 1 and `code: message (request id)`, a usage error with exit 2', async () => {
    const missing = await cli(['forget', 'urn:uuid:01935f6e-8a2b-7c3d-9e4f-5a6b7c8d9e0f']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^NOT_FOUND: .+ \(req_[^)]+\)\n$/);

    const badKey = await cli(['list', '--api-key', 'sk_not_a_real_key_0000']);
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/^UNAUTHORIZED: /);
    expect(badKey.stderr).not.toContain('sk_not_a_real_key_0000');

    expect((await cli(['search'])).code).toBe(2);
    expect((await cli(['search', 'x', '--mode', 'fuzzy'])).code).toBe(2);
    expect((await cli(['frobnicate'])).code).toBe(2);
    expect((await cli(['audit'])).code).toBe(2); // a group without its subcommand
    const unwritable = await cli(['export', '-o', join(dir, 'no-such-dir', 'out.json')]);
    expect(unwritable.code).toBe(2);
    expect(unwritable.stderr).toMatch(/^engram: .+out\.json: no such file\n$/);
    const noKey = await runCli(['list'], { XDG_CONFIG_HOME: join(dir, 'nobody'), ENGRAM_URL: server.base });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('engram login');

    const help = await cli(['rollback', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--preview');
  });

  it('bridges stdio MCP to /mcp: the official client initializes, lists tools and remembers', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cliMain, 'mcp'],
      env: { ...env, PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'cli-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['remember', 'recall', 'rollback']));
      const stored = await client.callTool({ name: 'remember', arguments: { observation: 'Bridged over stdio', tags: ['mcp'] } });
      expect(stored.isError, JSON.stringify(stored)).toBeFalsy();
      expect((stored.structuredContent as { uuid: string }).uuid).toMatch(/^urn:uuid:/);
    } finally {
      await client.close();
    }
    const found = await cli(['list', '--tags', 'mcp', '--json']);
    expect((JSON.parse(found.stdout) as { memories: { observation: string }[] }).memories[0].observation).toBe('Bridged over stdio');
  });
});
