import { sql } from '../platform/data/db';
import { type DbOrTx, rows } from '../platform/data/db';
import type { MemoryEventInput } from './events';

/**
 * Memories feed the knowledge graph: a stored memory is linked to the tenant's existing entities
 * that its text names (table memory_entities, migrations/0016), and each link is a `link` event of
 * the memory with relation `mentions`, so replay (snapshot edges, lifecycle) shows it like a link
 * between memories. The memories family links on store, the knowledge family unlinks when an
 * entity is deleted, replay reads the links, rollback puts them back: the rule lives here once.
 *
 * The rule (docs/memories.md#knowledge-graph, and the OpenAPI of POST /v1/memories): an entity is linked
 * when its name equals a run of 1 to MENTION_MAX_WORDS consecutive words of the observation,
 * compared after the same normalization entity names get (trimmed, whitespace runs as one space,
 * lowercased), with punctuation at either end of the run ignored and a trailing possessive `'s`
 * optional. Words are what whitespace separates, so `Ada,` and `(ada)` name `ada` but `adam` and
 * `ada-lovelace` do not. Only names of at least MENTION_MIN_CHARS characters link, and at most
 * MENTION_MAX_LINKS entities per memory: those mentioned first in the text.
 */
export const MENTION_MIN_CHARS = 3;
export const MENTION_MAX_WORDS = 5;
export const MENTION_MAX_LINKS = 20;
/** Entity names are at most this long (the knowledge family validates it; longer runs cannot match). */
export const ENTITY_NAME_MAX = 200;
export const MENTIONS = 'mentions';

/** The rule above for people: the OpenAPI of the routes that link (memories) and show (knowledge) mentions. */
export const MENTION_RULE = `A memory mentions an entity of its owner when, at the time it is stored, its observation contains the entity's name as a run of 1 to ${MENTION_MAX_WORDS} whole words (whitespace-separated; case-insensitive; punctuation at the ends of the run and a possessive 's ignored; names of at least ${MENTION_MIN_CHARS} characters), on tiers with the knowledge graph; at most ${MENTION_MAX_LINKS} entities per memory, those named first. Entities created later, and later edits of the text, do not change a memory's links.`;

/** An entity name or type as stored: trimmed, whitespace runs as one space, lowercased. */
export const normalizeName = (value: string) => value.trim().replace(/\s+/gu, ' ').toLowerCase();

const EDGE_PUNCTUATION = /^\p{P}+|\p{P}+$/gu;

const LEADING_PUNCTUATION = /^\p{P}+/u;
const TRAILING_PUNCTUATION = /\p{P}+$/u;

/** The forms a run of words can name an entity by: as written, without end punctuation (`bare`), without a possessive. */
function formsOf(run: string, bare: string, into: Set<string>) {
  addForm(run, into);
  if (bare !== run) addForm(bare, into);
  // A possessive: `'s` or `’s` at the end (checked by character: this runs for every run of every store's text).
  const n = bare.length;
  if (n > 2 && bare.charCodeAt(n - 1) === 115 && (bare.charCodeAt(n - 2) === 39 || bare.charCodeAt(n - 2) === 0x2019)) addForm(bare.slice(0, -2), into);
}

const addForm = (form: string, into: Set<string>) => {
  if (form.length >= MENTION_MIN_CHARS && form.length <= ENTITY_NAME_MAX) into.add(form);
};

/**
 * Every string an entity name would have to equal to be mentioned in `text`, first mention first.
 * Proportional to the text (at most about 3 × MENTION_MAX_WORDS per word), so the lookup is one
 * index probe per candidate whatever the size of the graph. Punctuation never spans the space
 * between words, so a run's ends are its first word's start and its last word's end: each word is
 * stripped once, not once for every run it ends (every store of a knowledge-graph tier runs this).
 */
export function mentionCandidates(text: string): string[] {
  const words = normalizeName(text).split(' ').filter(Boolean);
  const both = words.map((w) => w.replace(EDGE_PUNCTUATION, ''));
  const lead = words.map((w) => w.replace(LEADING_PUNCTUATION, ''));
  const trail = words.map((w) => w.replace(TRAILING_PUNCTUATION, ''));
  const found = new Set<string>();
  for (let i = 0; i < words.length; i++) {
    formsOf(words[i], both[i], found);
    let run = words[i];
    let between = ''; // the words strictly inside the run, each after a space
    for (let n = 1; n < MENTION_MAX_WORDS && i + n < words.length; n++) {
      run = `${run} ${words[i + n]}`;
      formsOf(run, `${lead[i]}${between} ${trail[i + n]}`, found);
      between = `${between} ${words[i + n]}`;
    }
  }
  return [...found];
}

export interface Mention {
  entity_id: string;
  name: string;
  entity_type: string;
}

type LinkEvent = Omit<MemoryEventInput, 'at' | 'actor' | 'requestId'>;

/** The `link` events of new mentions (replay's edge_states opens an interval for each). */
export const mentionEvents = (tenantId: string, memoryId: string, mentions: Mention[], extra: Record<string, unknown> = {}): LinkEvent[] =>
  mentions.map((m) => ({
    tenantId,
    memoryId,
    kind: 'link',
    metadata: { ...extra, target_id: m.entity_id, relation: MENTIONS, weight: 1, entity: { name: m.name, entity_type: m.entity_type } },
  }));

/**
 * Before an entity is deleted (its links go with it, ON DELETE CASCADE): an `unlink` event for
 * every memory that mentions it, which closes those links in replay at this moment. The caller
 * holds the entity FOR UPDATE, so no store links to it meanwhile.
 */
export async function unlinkEvents(tx: DbOrTx, tenantId: string, entity: Mention): Promise<LinkEvent[]> {
  const id = entity.entity_id.replace(/^urn:uuid:/, '');
  const linked = await rows<{ memory_id: string }>(
    tx,
    sql`SELECT memory_id::text FROM memory_entities WHERE entity_id = ${id}::uuid AND tenant_id = ${tenantId} ORDER BY memory_id`,
  );
  return linked.map((l) => ({
    tenantId,
    memoryId: l.memory_id,
    kind: 'unlink',
    metadata: { target_id: entity.entity_id, relation: MENTIONS, reason: 'entity deleted', entity: { name: entity.name, entity_type: entity.entity_type } },
  }));
}

/** The entities a memory mentions now, in the order they were linked (replay lifecycle). */
export function mentionsOf(db: DbOrTx, tenantId: string, memoryId: string) {
  return rows<Mention & { linked_at: Date | string }>(
    db,
    sql`SELECT 'urn:uuid:' || e.id AS entity_id, e.name, e.entity_type, me.created_at AS linked_at
        FROM memory_entities me JOIN knowledge_entities e ON e.id = me.entity_id
        WHERE me.memory_id = ${memoryId}::uuid AND me.tenant_id = ${tenantId}
        ORDER BY me.created_at, e.name, e.entity_type`,
  );
}

/**
 * A rollback that brings memories back restores the mentions they had at its target (`past`, the
 * `mentions` edges of edgesAt) whose entity still exists; deleted entities are not restored (the
 * knowledge graph is not rolled back). Returns the link events to record.
 */
export async function restoreMentions(
  tx: DbOrTx,
  tenantId: string,
  past: { source_id: string; target_id: string; relation: string }[],
  now: Date,
  meta: Record<string, unknown>,
) {
  const wanted = past.filter((p) => p.relation === MENTIONS);
  if (!wanted.length) return [];
  const restored = await rows<Mention & { memory_id: string }>(
    tx,
    sql`WITH wanted AS (
          SELECT DISTINCT w.source_id, w.target_id FROM jsonb_to_recordset(${JSON.stringify(wanted)}::jsonb) AS w(source_id uuid, target_id uuid)),
        found AS (
          SELECT w.source_id, e.id, e.name, e.entity_type FROM wanted w
          JOIN knowledge_entities e ON e.id = w.target_id AND e.tenant_id = ${tenantId}
          JOIN memories m ON m.id = w.source_id AND m.tenant_id = ${tenantId}
          ORDER BY e.id FOR KEY SHARE OF e),
        linked AS (
          INSERT INTO memory_entities (memory_id, entity_id, tenant_id, created_at)
          SELECT f.source_id, f.id, ${tenantId}, ${now.toISOString()} FROM found f ON CONFLICT DO NOTHING
          RETURNING memory_id, entity_id)
        SELECT l.memory_id::text, 'urn:uuid:' || f.id AS entity_id, f.name, f.entity_type
        FROM linked l JOIN found f ON f.source_id = l.memory_id AND f.id = l.entity_id
        ORDER BY l.memory_id, f.name, f.entity_type`,
  );
  return restored.flatMap((r) => mentionEvents(tenantId, r.memory_id, [r], meta));
}
