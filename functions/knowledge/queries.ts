import { type SQL, sql } from 'drizzle-orm';
import { live } from '../../shared/memory/access';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';

/**
 * Every statement of the knowledge family; each takes the tenant. Ids travel as bare uuids and
 * leave as `urn:uuid:` text.
 */

export interface EntityRow {
  entity_id: string;
  name: string;
  entity_type: string;
  metadata: Record<string, unknown>;
  created_at: Date | string;
}

/** A triple as a step of a path: its id, predicate and both entities (columns STEP_COLUMNS). */
export interface StepRow {
  triple_id: string;
  predicate: string;
  s_id: string;
  s_name: string;
  s_type: string;
  o_id: string;
  o_name: string;
  o_type: string;
}

export interface TripleRow extends StepRow {
  confidence: number;
  metadata: Record<string, unknown>;
  created_at: Date | string;
  source_memory_id: string | null;
}

const urn = (column: SQL) => sql`'urn:uuid:' || ${column}`;
const ENTITY_COLUMNS = sql`${urn(sql`e.id`)} AS entity_id, e.name, e.entity_type, e.metadata, e.created_at`;
/** A triple `t` with its subject `s` and object `o`. */
const STEP_COLUMNS = sql`${urn(sql`t.id`)} AS triple_id, t.predicate,
  ${urn(sql`s.id`)} AS s_id, s.name AS s_name, s.entity_type AS s_type, ${urn(sql`o.id`)} AS o_id, o.name AS o_name, o.entity_type AS o_type`;
const WITH_ENTITIES = sql`JOIN knowledge_entities s ON s.id = t.subject_id JOIN knowledge_entities o ON o.id = t.object_id`;

/**
 * A triple with its two entities; its source memory only while that memory is live (a memory past
 * its TTL is gone from every read before maintenance deletes it, which then clears the column).
 */
const tripleSelect = (tenantId: string, now: Date) => sql`
  SELECT ${STEP_COLUMNS}, t.confidence, t.metadata, t.created_at, ${urn(sql`m.id`)} AS source_memory_id
  FROM knowledge_triples t ${WITH_ENTITIES}
  LEFT JOIN memories m ON m.id = t.source_memory_id AND m.tenant_id = ${tenantId} AND ${live(now)}`;

/**
 * Finds or creates entities by name, in one statement, in name order (so two requests creating the
 * same pair of entities take their rows in the same order and cannot deadlock). An entity is its
 * name within the tenant: an existing one is reused whatever type is given or omitted, and a type
 * other than `defaultType` replaces the default type only while the entity still has it. A concurrent creator
 * of the same entity makes this wait for its commit, then return its row. The update locks the row
 * (FOR NO KEY UPDATE: memory links to it go on) until commit, so an entity delete running at the
 * same time waits and then removes the new triple with it.
 */
export async function upsertEntities(
  tx: DbOrTx,
  tenantId: string,
  wanted: { id: string; name: string; entity_type: string }[],
  defaultType: string,
  now: Date,
) {
  return rows<EntityRow & { created: boolean }>(
    tx,
    sql`INSERT INTO knowledge_entities AS e (id, tenant_id, name, entity_type, metadata, created_at)
        SELECT w.id, ${tenantId}, w.name, w.entity_type, '{}'::jsonb, ${now.toISOString()}
        FROM jsonb_to_recordset(${JSON.stringify(wanted)}::jsonb) AS w(id uuid, name text, entity_type text)
        ORDER BY w.name
        ON CONFLICT (tenant_id, name) DO UPDATE
          SET entity_type = CASE WHEN e.entity_type = ${defaultType} THEN EXCLUDED.entity_type ELSE e.entity_type END
        RETURNING ${ENTITY_COLUMNS}, (e.xmax = 0) AS created`,
  );
}

/** The tenant's live memory, locked FOR KEY SHARE so it cannot go before the triple naming it commits. */
export async function lockSourceMemory(tx: DbOrTx, tenantId: string, memoryId: string, now: Date): Promise<boolean> {
  const found = await rows(tx, sql`SELECT 1 FROM memories m WHERE m.id = ${memoryId}::uuid AND m.tenant_id = ${tenantId} AND ${live(now)} FOR KEY SHARE`);
  return found.length > 0;
}

export async function insertTriple(
  tx: DbOrTx,
  t: {
    id: string;
    tenantId: string;
    subjectId: string;
    predicate: string;
    objectId: string;
    confidence: number;
    sourceMemoryId: string | null;
    metadata: Record<string, unknown>;
  },
  now: Date,
) {
  await tx.execute(sql`
    INSERT INTO knowledge_triples (id, tenant_id, subject_id, predicate, object_id, confidence, source_memory_id, metadata, created_at)
    VALUES (${t.id}::uuid, ${t.tenantId}, ${t.subjectId}::uuid, ${t.predicate}, ${t.objectId}::uuid, ${t.confidence},
            ${t.sourceMemoryId}::uuid, ${JSON.stringify(t.metadata)}::jsonb, ${now.toISOString()})`);
}

export async function tripleOf(db: DbOrTx, tenantId: string, tripleId: string, now: Date): Promise<TripleRow | null> {
  const [found] = await rows<TripleRow>(db, sql`${tripleSelect(tenantId, now)} WHERE t.tenant_id = ${tenantId} AND t.id = ${tripleId}::uuid`);
  return found ?? null;
}

export interface TripleFilter {
  subject?: string;
  predicate?: string;
  object?: string;
  sourceMemoryId?: string;
}

/** The tenant's triples matching the filters, as one condition over alias `t` (and `m`, the live source memory). */
function whereTriples(tenantId: string, f: TripleFilter): SQL {
  const named = (column: SQL, name: string) => sql`${column} IN (SELECT n.id FROM knowledge_entities n WHERE n.tenant_id = ${tenantId} AND n.name = ${name})`;
  const parts: SQL[] = [sql`t.tenant_id = ${tenantId}`];
  if (f.subject !== undefined) parts.push(named(sql`t.subject_id`, f.subject));
  if (f.object !== undefined) parts.push(named(sql`t.object_id`, f.object));
  if (f.predicate !== undefined) parts.push(sql`t.predicate = ${f.predicate}`);
  if (f.sourceMemoryId !== undefined) parts.push(sql`t.source_memory_id = ${f.sourceMemoryId}::uuid AND m.id IS NOT NULL`);
  return sql.join(parts, sql` AND `);
}

/** A page newest first, and the total. */
export async function listTriples(db: DbOrTx, tenantId: string, f: TripleFilter, page: PageInput, now: Date) {
  const where = whereTriples(tenantId, f);
  const memoryJoin =
    f.sourceMemoryId !== undefined ? sql`LEFT JOIN memories m ON m.id = t.source_memory_id AND m.tenant_id = ${tenantId} AND ${live(now)}` : sql``;
  const [found, [{ n }]] = await Promise.all([
    rows<TripleRow>(db, sql`${tripleSelect(tenantId, now)} WHERE ${where} ORDER BY t.created_at DESC, t.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`),
    rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM knowledge_triples t ${memoryJoin} WHERE ${where}`),
  ]);
  return { page: found, total: Number(n) };
}

export async function deleteTriple(tx: DbOrTx, tenantId: string, tripleId: string): Promise<boolean> {
  const gone = await rows(tx, sql`DELETE FROM knowledge_triples WHERE tenant_id = ${tenantId} AND id = ${tripleId}::uuid RETURNING id`);
  return gone.length > 0;
}

/** One entity; `lock` takes it FOR UPDATE (a delete: triples and memory links that name it wait). */
export async function entityOf(db: DbOrTx, tenantId: string, entityId: string, lock = false): Promise<EntityRow | null> {
  const [found] = await rows<EntityRow>(
    db,
    sql`SELECT ${ENTITY_COLUMNS} FROM knowledge_entities e WHERE e.tenant_id = ${tenantId} AND e.id = ${entityId}::uuid ${lock ? sql`FOR UPDATE` : sql``}`,
  );
  return found ?? null;
}

/** The entity of this (normalized) name, or null. */
export async function entityNamed(db: DbOrTx, tenantId: string, name: string): Promise<EntityRow | null> {
  const [found] = await rows<EntityRow>(db, sql`SELECT ${ENTITY_COLUMNS} FROM knowledge_entities e WHERE e.tenant_id = ${tenantId} AND e.name = ${name}`);
  return found ?? null;
}

/**
 * A page of entities in name order (then type), with how many triples name each, and the total.
 * The prefix is a range over the name index (COLLATE "C": byte order) checked with starts_with.
 */
export async function listEntities(db: DbOrTx, tenantId: string, f: { entityType?: string; prefix?: string }, page: PageInput) {
  const parts: SQL[] = [sql`e.tenant_id = ${tenantId}`];
  if (f.entityType !== undefined) parts.push(sql`e.entity_type = ${f.entityType}`);
  if (f.prefix !== undefined) parts.push(sql`e.name >= ${f.prefix} AND e.name < ${`${f.prefix}\u{10FFFF}`} AND starts_with(e.name, ${f.prefix})`);
  const where = sql.join(parts, sql` AND `);
  const [found, [{ n }]] = await Promise.all([
    rows<EntityRow & { triple_count: number | string }>(
      db,
      sql`SELECT ${ENTITY_COLUMNS},
                 (SELECT count(*) FROM knowledge_triples t WHERE (t.subject_id = e.id OR t.object_id = e.id) AND t.tenant_id = ${tenantId}) AS triple_count
          FROM knowledge_entities e WHERE ${where}
          ORDER BY e.name, e.entity_type LIMIT ${page.limit} OFFSET ${page.offset}`,
    ),
    rows<{ n: number | string }>(db, sql`SELECT count(*) AS n FROM knowledge_entities e WHERE ${where}`),
  ]);
  return { page: found, total: Number(n) };
}

export interface ConnectionRow {
  triple_id: string;
  predicate: string;
  confidence: number;
  created_at: Date | string;
  other_id: string;
  other_name: string;
  other_type: string;
}

/**
 * An entity with its neighbourhood, in one statement: its newest `limit` triples as subject and as
 * object with the entity at the other end, both counts, and the newest live memories linked to it.
 * Null when the tenant has no such entity.
 */
export async function neighbourhood(db: DbOrTx, tenantId: string, entityId: string, limit: number, now: Date) {
  const side = (here: string, there: string) =>
    sql`(SELECT coalesce(json_agg(x), '[]'::json) FROM (
      SELECT ${urn(sql`t.id`)} AS triple_id, t.predicate, t.confidence, t.created_at,
             ${urn(sql`x.id`)} AS other_id, x.name AS other_name, x.entity_type AS other_type
      FROM knowledge_triples t JOIN knowledge_entities x ON x.id = t.${sql.raw(there)}
      WHERE t.${sql.raw(here)} = e.id AND t.tenant_id = ${tenantId}
      ORDER BY t.created_at DESC, t.id DESC LIMIT ${limit}) x)`;
  const count = (here: string) => sql`(SELECT count(*) FROM knowledge_triples t WHERE t.${sql.raw(here)} = e.id AND t.tenant_id = ${tenantId})`;
  const mentions = sql`FROM memory_entities me JOIN memories m ON m.id = me.memory_id AND m.tenant_id = ${tenantId} AND ${live(now)}
                       WHERE me.entity_id = e.id AND me.tenant_id = ${tenantId}`;
  const [found] = await rows<
    EntityRow & {
      as_subject: Json<ConnectionRow[]>;
      as_object: Json<ConnectionRow[]>;
      subjects: number | string;
      objects: number | string;
      mentioned_in: Json<string[]>;
      mention_count: number | string;
    }
  >(
    db,
    sql`SELECT ${ENTITY_COLUMNS}, ${side('subject_id', 'object_id')} AS as_subject, ${side('object_id', 'subject_id')} AS as_object,
               ${count('subject_id')} AS subjects, ${count('object_id')} AS objects,
               (SELECT coalesce(json_agg(x.id), '[]'::json) FROM (
                  SELECT ${urn(sql`me.memory_id`)} AS id ${mentions} ORDER BY me.created_at DESC, me.memory_id DESC LIMIT ${limit}) x) AS mentioned_in,
               (SELECT count(*) ${mentions}) AS mention_count
        FROM knowledge_entities e WHERE e.tenant_id = ${tenantId} AND e.id = ${entityId}::uuid`,
  );
  if (!found) return null;
  return {
    entity: found,
    asSubject: parsed(found.as_subject),
    asObject: parsed(found.as_object),
    total: Number(found.subjects) + Number(found.objects),
    mentionedIn: parsed(found.mentioned_in),
    mentionCount: Number(found.mention_count),
  };
}

/** json columns come parsed from every driver we use; tolerate text anyway. */
type Json<T> = T | string;
const parsed = <T>(v: Json<T>): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);

/** Deletes the triples that name the entity, then the entity (its memory links go with it); the triple count. */
export async function deleteEntity(tx: DbOrTx, tenantId: string, entityId: string): Promise<number> {
  const [{ n }] = await rows<{ n: number | string }>(
    tx,
    sql`WITH gone AS (DELETE FROM knowledge_triples t WHERE t.tenant_id = ${tenantId} AND (t.subject_id = ${entityId}::uuid OR t.object_id = ${entityId}::uuid) RETURNING 1)
        SELECT count(*) AS n FROM gone`,
  );
  await tx.execute(sql`DELETE FROM knowledge_entities WHERE tenant_id = ${tenantId} AND id = ${entityId}::uuid`);
  return Number(n);
}

/** Triples followed from each entity, per direction, newest first: a hub does not flood the search. */
export const PATH_FANOUT = 50;
/** Partial paths kept per side of the search; the walk stops extending once this many exist. */
export const PATH_FRONTIER = 5_000;

/**
 * One side of the path search: simple paths (no entity twice) of up to `depth` triples from
 * `start`, in either direction, breadth first, never through `stop` (the other end). Read through
 * `LIMIT PATH_FRONTIER`, so Postgres stops the recursion once that many partial paths exist: the
 * shortest are kept. `entities` ends with the entity reached; `triples` runs from `start` outward,
 * or toward `start` when `inward` (the side walked from the end of the path).
 */
function walk(name: string, tenantId: string, start: string, stop: string, depth: number, inward: boolean): SQL {
  const w = sql.raw(name);
  const grow = inward ? sql`n.triple_id || w.triples` : sql`w.triples || n.triple_id`;
  const step = (here: string, there: string) =>
    sql`(SELECT t.id AS triple_id, t.${sql.raw(there)} AS next_id FROM knowledge_triples t
         WHERE t.${sql.raw(here)} = w.entity_id AND t.tenant_id = ${tenantId}
         ORDER BY t.created_at DESC, t.id DESC LIMIT ${PATH_FANOUT})`;
  return sql`${w}(entity_id, entities, triples, depth) AS (
      SELECT ${start}::uuid, ARRAY[${start}::uuid], ARRAY[]::uuid[], 0
      UNION ALL
      SELECT n.next_id, w.entities || n.next_id, ${grow}, w.depth + 1
      FROM ${w} w CROSS JOIN LATERAL (${step('subject_id', 'object_id')} UNION ALL ${step('object_id', 'subject_id')}) n
      WHERE w.depth < ${depth} AND w.entity_id <> ${stop}::uuid AND n.next_id <> ALL(w.entities))`;
}

/**
 * Up to `max` shortest simple paths of at most `hops` triples between two entities, following
 * triples either way, as lists of triple ids. Meet in the middle: a walk of ⌈hops/2⌉ from `from`
 * and one of ⌊hops/2⌋ from `to` (each bounded by PATH_FANOUT and PATH_FRONTIER) joined on the
 * entity where they meet; a path of length L is found once, split as ⌈hops/2⌉ (or L) triples from
 * the start and the rest from the end. Each length is its own LIMITed join, so a dense graph stops
 * at `max` per length. Shortest first, then by triple ids. The planner cannot know how large the
 * walks are and would join them by nested loops (thousands × thousands): hash joins are forced.
 */
export async function shortestPaths(db: DbOrTx, tenantId: string, from: string, to: string, hops: number, max: number) {
  const [ahead, behind] = [Math.ceil(hops / 2), Math.floor(hops / 2)];
  const lengths = Array.from({ length: hops }, (_, i) => i + 1).map((length) => {
    const a = Math.min(length, ahead);
    return sql`(SELECT f.triples || b.triples AS triples, ${length}::int AS hops FROM f JOIN b ON b.entity_id = f.entity_id
                WHERE f.depth = ${a} AND b.depth = ${length - a} AND NOT (f.entities[1:f.depth] && b.entities) LIMIT ${max})`;
  });
  return db.transaction(async (tx) => {
    await tx.execute(sql`SET LOCAL enable_nestloop = off`);
    await tx.execute(sql`SET LOCAL jit = off`);
    const found = await rows<{ triples: string[] | string }>(
      tx,
      sql`WITH RECURSIVE ${walk('fw', tenantId, from, to, ahead, false)}, ${walk('bw', tenantId, to, from, behind, true)},
          f AS MATERIALIZED (SELECT * FROM fw LIMIT ${PATH_FRONTIER}),
          b AS MATERIALIZED (SELECT * FROM bw LIMIT ${PATH_FRONTIER}),
          found AS (${sql.join(lengths, sql` UNION ALL `)})
          SELECT found.triples::text[] AS triples FROM found ORDER BY found.hops, found.triples LIMIT ${max}`,
    );
    const paths = found.map((p) => (typeof p.triples === 'string' ? parsePgArray(p.triples) : p.triples));
    if (!paths.length) return [];
    await tx.execute(sql`SET LOCAL enable_nestloop = on`);
    const steps = await rows<StepRow>(
      tx,
      sql`SELECT ${STEP_COLUMNS} FROM knowledge_triples t ${WITH_ENTITIES}
          WHERE t.tenant_id = ${tenantId} AND t.id = ANY(${pgArray([...new Set(paths.flat())])}::uuid[])`,
    );
    // A triple deleted between the two statements takes its paths with it.
    const byId = new Map(steps.map((step) => [step.triple_id, step]));
    return paths.map((p) => p.map((id) => byId.get(`urn:uuid:${id}`))).filter((p): p is StepRow[] => p.every(Boolean));
  });
}

/** A one-dimensional Postgres text array of uuids, `{a,b}`, as a driver may leave it. */
const parsePgArray = (text: string) =>
  text
    .replace(/^\{|\}$/g, '')
    .split(',')
    .filter(Boolean);
