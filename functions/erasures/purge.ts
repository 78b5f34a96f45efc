import { type SQL, sql } from 'drizzle-orm';
import { eventBodySql, WEBHOOK_DELIVERY_TOPIC } from '../../shared/jobs/events';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/data/db';
import { toUrn } from '../../shared/platform/contract/ids';
import { redactJson } from './redact';

/**
 * Every place engram keeps a memory's content, and what an erasure does there (docs/security.md#erasure).
 * Each place is counted, and unless it is a dry run, erased, in the erasure's transaction.
 */
export const PLACES = [
  'memories',
  'events',
  'states',
  'state_vectors',
  'edge_states',
  'links',
  'postings',
  'entity_links',
  'triples_unlinked',
  'neighbours',
  'stream_events',
  'deliveries',
  'jobs',
  'idempotency_records',
  'eval_baselines',
  'import_lines',
  'held_memories',
] as const;
export type Counts = Record<(typeof PLACES)[number], number>;

const n = async (db: DbOrTx, query: SQL) => Number((await rows<{ n: number | string }>(db, query))[0]?.n ?? 0);

/** A count of what `where` names in `table`, or that many rows deleted. */
const deleted = (db: DbOrTx, dryRun: boolean, table: string, where: SQL) =>
  n(
    db,
    dryRun
      ? sql`SELECT count(*) AS n FROM ${sql.raw(table)} WHERE ${where}`
      : sql`WITH d AS (DELETE FROM ${sql.raw(table)} WHERE ${where} RETURNING 1) SELECT count(*) AS n FROM d`,
  );

/** Every text the memories had in any version: what a stored copy outside their rows would quote. */
async function textsOf(db: DbOrTx, tenantId: string, ids: SQL): Promise<Set<string>> {
  const found = await rows<{ text: string }>(
    db,
    sql`SELECT DISTINCT v.text FROM memory_events e,
          LATERAL (VALUES (e.after->>'observation'), (e.before->>'observation'), (e.after->>'context'), (e.before->>'context')) v(text)
        WHERE e.tenant_id = ${tenantId} AND e.memory_id IN ${ids} AND v.text IS NOT NULL
        UNION
        SELECT m.observation FROM memories m WHERE m.tenant_id = ${tenantId} AND m.id IN ${ids}`,
  );
  return new Set(found.map((r) => r.text));
}

/**
 * Rows of `table` (with `id` and a jsonb `column`) of the tenant whose JSON holds one of `names`
 * as a string anywhere. Only id-shaped strings leave the database, and the match is a set lookup
 * here: linear in the references, whatever the number of erased memories.
 */
async function mentioning(db: DbOrTx, table: string, column: string, tenantId: string, names: ReadonlySet<string>) {
  // A stream event's body as sent: one that names its memory quotes it from the create event.
  const json = table === 'events' ? eventBodySql('t') : sql`t.${sql.raw(column)}`;
  const leaves = await rows<{ id: string; s: string }>(
    db,
    sql`SELECT t.id, v #>> '{}' AS s FROM ${sql.raw(table)} t, jsonb_path_query(${json}, 'strict $.** ? (@.type() == "string")') v
        WHERE t.tenant_id = ${tenantId} AND (v #>> '{}' LIKE 'urn:uuid:%' OR v #>> '{}' LIKE '________-____-____-____-____________')`,
  );
  const ids = [...new Set(leaves.filter((l) => names.has(l.s)).map((l) => l.id))];
  if (!ids.length) return [];
  return rows<{ id: string; json: unknown }>(
    db,
    sql`SELECT t.id, ${json} AS json FROM ${sql.raw(table)} t WHERE t.tenant_id = ${tenantId} AND t.id IN (SELECT unnest(${pgArray(ids)}::text[]))`,
  );
}

/**
 * Erases (or, on a dry run, counts) the content of `memoryIds` of the tenant everywhere: rows,
 * history, replay intervals, search postings (the corpus statistics follow by trigger), links,
 * knowledge links, Cortex pairs, stream events, queued jobs, idempotent replays that may quote them
 * and eval baselines expecting their text. `earliest` is the first time any of them lived.
 */
export async function purge(db: DbOrTx, input: { tenantId: string; memoryIds: string[]; earliest: Date | null; dryRun: boolean }): Promise<Counts> {
  const { tenantId, dryRun } = input;
  const t = sql`tenant_id = ${tenantId}`;
  // A set the planner can hash (`= ANY(array)` compares every row with every id).
  const ids = sql`(SELECT unnest(${pgArray(input.memoryIds)}::uuid[]))`;
  const texts = await textsOf(db, tenantId, ids);
  const names = new Set([...input.memoryIds, ...input.memoryIds.map(toUrn)]);
  const counts = {} as Counts;

  counts.state_vectors = await deleted(
    db,
    dryRun,
    'state_vectors',
    sql`${t} AND event_id IN (SELECT e.id FROM memory_events e WHERE e.tenant_id = ${tenantId} AND e.memory_id IN ${ids})`,
  );
  counts.states = await deleted(db, dryRun, 'memory_states', sql`${t} AND memory_id IN ${ids}`);
  counts.edge_states = await deleted(db, dryRun, 'edge_states', sql`${t} AND (source_id IN ${ids} OR target_id IN ${ids})`);
  // Read before the create events go: a stream event that names its memory quotes them.
  const streamed = input.memoryIds.length ? await mentioning(db, 'events', 'payload', tenantId, names) : [];
  counts.events = await deleted(db, dryRun, 'memory_events', sql`${t} AND memory_id IN ${ids}`);
  counts.links = await deleted(db, dryRun, 'memory_edges', sql`${t} AND (source_id IN ${ids} OR target_id IN ${ids})`);
  counts.entity_links = await deleted(db, dryRun, 'memory_entities', sql`${t} AND memory_id IN ${ids}`);
  counts.neighbours =
    (await deleted(db, dryRun, 'memory_neighbours', sql`${t} AND (memory_id IN ${ids} OR neighbour_id IN ${ids})`)) +
    (await deleted(db, dryRun, 'memory_neighbour_probes', sql`${t} AND memory_id IN ${ids}`));
  counts.triples_unlinked = await n(
    db,
    dryRun
      ? sql`SELECT count(*) AS n FROM knowledge_triples WHERE ${t} AND source_memory_id IN ${ids}`
      : sql`WITH u AS (UPDATE knowledge_triples SET source_memory_id = NULL WHERE ${t} AND source_memory_id IN ${ids} RETURNING 1) SELECT count(*) AS n FROM u`,
  );
  // The row's postings and its share of the corpus statistics go with it (triggers of migrations/0022, 0026).
  // Postings are keyed by the tenant's number (migrations/0053).
  const postings = sql`tenant_no = (SELECT tenant_no FROM tenants WHERE id = ${tenantId}) AND memory_id IN ${ids}`;
  counts.postings = await n(db, sql`SELECT count(*) AS n FROM memory_postings WHERE ${postings}`);
  if (!dryRun) {
    // A memory it superseded is current again, as after a delete.
    await db.execute(sql`UPDATE memories SET superseded_by = NULL WHERE ${t} AND superseded_by IN ${ids}`);
  }
  counts.memories = await deleted(db, dryRun, 'memories', sql`${t} AND id IN ${ids}`);
  if (!dryRun) await db.execute(sql`DELETE FROM memory_postings WHERE ${postings}`);

  counts.stream_events = streamed.length;
  counts.deliveries = streamed.length
    ? await n(
        db,
        sql`SELECT count(*) AS n FROM outbox WHERE ${t} AND topic = ${WEBHOOK_DELIVERY_TOPIC} AND status = 'pending'
            AND payload->>'event_id' IN (SELECT unnest(${pgArray(streamed.map((e) => e.id))}::text[]))`,
      )
    : 0;
  const jobs = input.memoryIds.length ? await mentioning(db, 'outbox', 'payload', tenantId, names) : [];
  counts.jobs = jobs.length;
  counts.idempotency_records = input.earliest
    ? await deleted(db, dryRun, 'idempotency_keys', sql`${t} AND created_at >= ${input.earliest.toISOString()}::timestamptz AND response_body IS NOT NULL`)
    : 0;
  counts.eval_baselines = texts.size
    ? await deleted(db, dryRun, 'eval_baselines', sql`${t} AND expected_observation IN (SELECT unnest(${pgArray([...texts])}::text[]))`)
    : 0;
  if (!dryRun) {
    // A stored event keeps its id and seq (a stream resumes past it) and a delivery sends the
    // redacted body, stored whole: the create event it named is gone.
    if (streamed.length) {
      const redacted = streamed.map((e) => ({ id: e.id, payload: redactJson(e.json, names, texts) }));
      await db.execute(sql`UPDATE events e SET payload = r.payload, memory_id = NULL FROM jsonb_to_recordset(${JSON.stringify(redacted)}::jsonb) AS r(id text, payload jsonb)
                           WHERE e.tenant_id = ${tenantId} AND e.id = r.id`);
    }
    if (jobs.length) await db.execute(sql`DELETE FROM outbox WHERE ${t} AND id IN (SELECT unnest(${pgArray(jobs.map((j) => j.id))}::text[]))`);
  }
  return counts;
}
