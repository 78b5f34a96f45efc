/**
 * engram's stores from 16 clients, each for a tenant of its own, their recorded statements sent
 * again (test/bench/statement-replay.ts; for test/bench/peers.ts's throughput table): one plain
 * `pg.Client` per tenant, each sending the messages that name its tenant in the order they were
 * sent, one after the other, with no HTTP and no engram code. The tenants' audit chains, counters
 * and quotas are their own, so the clients' messages can interleave in any order.
 *
 * A message belongs to the one tenant it names (its text and parameters); one that names several
 * (the request gate's counter flush) or none is background and not replayed, nor are Redis calls.
 * engram's calls ran on whichever pooled connection was free, and the statements a connection had
 * prepared (SQL PREPARE, shared/platform/data/driver/short-transactions.ts) are named per
 * connection: each client here prepares the texts its messages execute before the clock starts,
 * under names of its own, as a warm connection of engram's had them.
 */
import pg from 'pg';
import type { Message } from './statement-replay';

/**
 * The recorded `messages` from index `from` on (sent while `stores` stores ran for `tenants`; the
 * database as it was before them) replayed from a client per tenant: stores per second, and how
 * many of the messages were replayed (the others are background).
 */
export async function replayClients(
  recorded: Message[],
  from: number,
  tenants: string[],
  stores: number,
  url: string,
): Promise<{ rate: number; replayed: number; recorded: number }> {
  const messages = recorded.slice(from);
  const prepared = new Map<string, string>(); // `${connection}:${name}`: the text it stands for, since the connection opened
  for (const m of recorded) {
    const p = /^PREPARE (\w+) AS\s+([\s\S]*)$/.exec(m.config.text);
    if (p) prepared.set(`${m.conn}:${p[1]}`, p[2]);
  }
  const session = messages.find((m) => m.config.text.startsWith('SET '))?.config.text;
  const own = new Map<string, Message[]>(tenants.map((t) => [t, []]));
  for (const m of messages) {
    if (m.config.text.startsWith('PREPARE ') || m.config.text.startsWith('SET ')) continue; // done below, before the clock
    const named = new Set(`${m.config.text} ${JSON.stringify(m.config.values ?? [])}`.match(/\bten_[A-Za-z0-9]{16,}/g) ?? []);
    const [tenant] = named;
    if (named.size === 1 && own.has(tenant)) own.get(tenant)!.push(m);
  }
  const clients = await Promise.all(
    [...own.values()].map(async (mine) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      if (session) await client.query(session);
      const names = new Map<string, string>(); // text: this client's name for it
      const script = mine.map((m) => ({
        ok: m.ok,
        config: {
          ...m.config,
          text: m.config.text.replace(/EXECUTE (engram_c\d+)\(/g, (_, name: string) => {
            const statement = prepared.get(`${m.conn}:${name}`);
            if (!statement) throw new Error(`replay: ${name} was never prepared on its connection`);
            let local = names.get(statement);
            if (!local) names.set(statement, (local = `engram_c${names.size}`));
            return `EXECUTE ${local}(`;
          }),
        },
      }));
      for (const [statement, name] of names) await client.query(`PREPARE ${name} AS ${statement}`);
      return { client, script };
    }),
  );
  const failures: string[] = [];
  const t0 = performance.now();
  await Promise.all(
    clients.map(async ({ client, script }) => {
      for (const { config, ok } of script) {
        const succeeded = await (client.query(config as pg.QueryConfig) as Promise<unknown>).then(
          () => true,
          () => false,
        );
        if (succeeded !== ok) failures.push(`${config.text.slice(0, 80)} ${succeeded ? 'succeeded' : 'failed'}, ${ok ? 'succeeded' : 'failed'} when recorded`);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(clients.map(({ client }) => client.end()));
  if (failures.length) throw new Error(`the replay parted from the recording: ${failures.join('; ')}`);
  return { rate: stores / seconds, replayed: clients.reduce((n, c) => n + c.script.length, 0), recorded: messages.length };
}
