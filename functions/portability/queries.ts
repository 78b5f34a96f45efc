import { type SQL, sql } from 'drizzle-orm';
import { type DbOrTx, rows } from '../../shared/platform/data/db';
import type { AGENT_PROVIDERS, AGENT_STATUSES } from '../../schema';
import type { ExportedLine } from './format';

/**
 * The tenant's records as a bundle holds them, one section per kind, each read a keyset page at a
 * time (`after` is the last key of the previous page) so an export of any size holds one page.
 */
export interface Section {
  type: string;
  count(db: DbOrTx, tenantId: string, now: Date): Promise<number>;
  page(db: DbOrTx, tenantId: string, now: Date, after: string | null, limit: number): Promise<{ key: string; line: Record<string, unknown> }[]>;
}

const iso = (v: unknown) => (v == null ? null : new Date(v as string).toISOString());
const urnOf = (v: string) => `urn:uuid:${v}`;
const urn = (v: string | null) => (v == null ? null : urnOf(v));
const countOf = async (db: DbOrTx, query: SQL) => Number((await rows<{ n: number | string }>(db, query))[0].n);
const keyAfter = (column: string, after: string | null, cast = '') => (after === null ? sql`` : sql`AND ${sql.raw(column)} > ${after}${sql.raw(cast)}`);

/** Live memories only: an expired one is gone for every read, and an erased one has no row. */
const liveMemory = (tenantId: string, now: Date) => sql`tenant_id = ${tenantId} AND (expires_at IS NULL OR expires_at > ${now.toISOString()})`;

const memories: Section = {
  type: 'memory',
  count: (db, t, now) => countOf(db, sql`SELECT count(*) AS n FROM memories WHERE ${liveMemory(t, now)}`),
  page: async (db, t, now, after, limit) =>
    (
      await rows<{
        id: string;
        observation: string;
        tags: string[];
        importance: number;
        confidence: number;
        context: string | null;
        agent_id: string | null;
        space_id: string | null;
        source_kind: string;
        source_via: string;
        source_ref: string | null;
        trust: string;
        created_at: unknown;
        updated_at: unknown;
        expires_at: unknown;
        occurred_at: unknown;
      }>(
        db,
        sql`SELECT id, observation, tags, importance, confidence, context, agent_id, space_id, source_kind, source_via, source_ref, trust,
                   created_at, updated_at, expires_at, coalesce(occurred_at, created_at) AS occurred_at
            FROM memories WHERE ${liveMemory(t, now)} ${keyAfter('id', after, '::uuid')} ORDER BY id LIMIT ${limit}`,
      )
    ).map((m) => ({
      key: m.id as string,
      line: {
        type: 'memory',
        id: urnOf(m.id),
        text: m.observation,
        tags: m.tags,
        importance: m.importance,
        confidence: m.confidence,
        context: m.context ?? null,
        agent_id: m.agent_id ?? null,
        space_id: urn(m.space_id),
        source: { kind: m.source_kind, via: m.source_via, ref: m.source_ref },
        trust: m.trust,
        created_at: iso(m.created_at),
        updated_at: iso(m.updated_at),
        expires_at: iso(m.expires_at),
        occurred_at: iso(m.occurred_at),
      } satisfies ExportedLine<'memory'>,
    })),
};

const spaces: Section = {
  type: 'space',
  count: (db, t) => countOf(db, sql`SELECT count(*) AS n FROM context_spaces WHERE owner_tenant_id = ${t} AND deleted_at IS NULL`),
  page: async (db, t, _now, after, limit) =>
    (
      await rows<{
        id: string;
        name: string;
        description: string | null;
        tags: string[];
        allowed_agent_ids: string[];
        created_at: unknown;
        updated_at: unknown;
      }>(
        db,
        sql`SELECT id, name, description, tags, allowed_agent_ids, created_at, updated_at FROM context_spaces
            WHERE owner_tenant_id = ${t} AND deleted_at IS NULL ${keyAfter('id', after, '::uuid')} ORDER BY id LIMIT ${limit}`,
      )
    ).map((s) => ({
      key: s.id as string,
      line: {
        type: 'space',
        id: urnOf(s.id),
        name: s.name,
        description: s.description ?? null,
        tags: s.tags,
        allowed_agent_ids: s.allowed_agent_ids,
        created_at: iso(s.created_at),
        updated_at: iso(s.updated_at),
      } satisfies ExportedLine<'space'>,
    })),
};

const triples: Section = {
  type: 'triple',
  count: (db, t) => countOf(db, sql`SELECT count(*) AS n FROM knowledge_triples WHERE tenant_id = ${t}`),
  page: async (db, t, _now, after, limit) =>
    (
      await rows<{
        id: string;
        subject: string;
        subject_type: string;
        predicate: string;
        object: string;
        object_type: string;
        confidence: number;
        metadata: Record<string, unknown>;
        created_at: unknown;
      }>(
        db,
        sql`SELECT k.id, s.name AS subject, s.entity_type AS subject_type, k.predicate, o.name AS object, o.entity_type AS object_type,
                   k.confidence, k.metadata, k.created_at
            FROM knowledge_triples k
            JOIN knowledge_entities s ON s.id = k.subject_id AND s.tenant_id = k.tenant_id
            JOIN knowledge_entities o ON o.id = k.object_id AND o.tenant_id = k.tenant_id
            WHERE k.tenant_id = ${t} ${keyAfter('k.id', after, '::uuid')} ORDER BY k.id LIMIT ${limit}`,
      )
    ).map((k) => ({
      key: k.id as string,
      line: {
        type: 'triple',
        id: urnOf(k.id),
        subject: { name: k.subject, type: k.subject_type },
        predicate: k.predicate,
        object: { name: k.object, type: k.object_type },
        confidence: k.confidence,
        metadata: k.metadata,
        created_at: iso(k.created_at),
      } satisfies ExportedLine<'triple'>,
    })),
};

const policies: Section = {
  type: 'policy',
  count: (db, t) => countOf(db, sql`SELECT count(*) AS n FROM policies WHERE tenant_id = ${t}`),
  page: async (db, t, _now, after, limit) =>
    (
      await rows<{
        id: string;
        name: string;
        agent_id: string | null;
        description: string | null;
        step_types: string[];
        whitelisted_domains: string[];
        rules: Record<string, unknown>[];
        enabled: boolean;
        created_at: unknown;
        updated_at: unknown;
      }>(
        db,
        sql`SELECT id, name, agent_id, description, step_types, whitelisted_domains, rules, enabled, created_at, updated_at
            FROM policies WHERE tenant_id = ${t} ${keyAfter('id', after)} ORDER BY id LIMIT ${limit}`,
      )
    ).map((p) => ({
      key: p.id as string,
      line: {
        type: 'policy',
        id: p.id,
        name: p.name,
        agent_id: p.agent_id ?? null,
        description: p.description ?? null,
        step_types: p.step_types,
        whitelisted_domains: p.whitelisted_domains,
        rules: p.rules,
        enabled: p.enabled,
        created_at: iso(p.created_at),
        updated_at: iso(p.updated_at),
      } satisfies ExportedLine<'policy'>,
    })),
};

const agents: Section = {
  type: 'agent',
  count: (db, t) => countOf(db, sql`SELECT count(*) AS n FROM runtime_agents WHERE tenant_id = ${t}`),
  page: async (db, t, _now, after, limit) =>
    (
      await rows<{
        agent_id: string;
        name: string;
        description: string | null;
        provider: (typeof AGENT_PROVIDERS)[number];
        model: string;
        instructions: string | null;
        capabilities: string[];
        status: (typeof AGENT_STATUSES)[number];
        created_at: unknown;
        updated_at: unknown;
      }>(
        db,
        sql`SELECT agent_id, name, description, provider, model, instructions, capabilities, status, created_at, updated_at
            FROM runtime_agents WHERE tenant_id = ${t} ${keyAfter('agent_id', after)} ORDER BY agent_id LIMIT ${limit}`,
      )
    ).map((a) => ({
      key: a.agent_id as string,
      line: {
        type: 'agent',
        agent_id: a.agent_id,
        name: a.name,
        description: a.description ?? null,
        provider: a.provider,
        model: a.model,
        instructions: a.instructions ?? null,
        capabilities: a.capabilities,
        status: a.status,
        created_at: iso(a.created_at),
        updated_at: iso(a.updated_at),
      } satisfies ExportedLine<'agent'>,
    })),
};

const packs: Section = {
  type: 'pack',
  count: (db, t) => countOf(db, sql`SELECT count(*) AS n FROM runtime_capabilities WHERE tenant_id = ${t}`),
  page: async (db, t, _now, after, limit) =>
    (
      await rows<{
        id: string;
        name: string;
        description: string | null;
        tools: { name: string; description: string }[];
        risk_levels: Record<string, string>;
        created_at: unknown;
      }>(
        db,
        sql`SELECT id, name, description, tools, risk_levels, created_at FROM runtime_capabilities
            WHERE tenant_id = ${t} ${keyAfter('id', after)} ORDER BY id LIMIT ${limit}`,
      )
    ).map((p) => ({
      key: p.id as string,
      line: {
        type: 'pack',
        id: p.id,
        name: p.name,
        description: p.description ?? null,
        tools: p.tools,
        risk_levels: p.risk_levels,
        created_at: iso(p.created_at),
      } satisfies ExportedLine<'pack'>,
    })),
};

/** Webhooks without their signing secrets: a bundle is a file people keep and pass around. */
const webhooks: Section = {
  type: 'webhook',
  count: (db, t) => countOf(db, sql`SELECT count(*) AS n FROM webhooks WHERE tenant_id = ${t}`),
  page: async (db, t, _now, after, limit) =>
    (
      await rows<{ id: string; url: string; events: string[]; active: boolean; description: string | null; format: string; created_at: unknown }>(
        db,
        sql`SELECT id, url, events, active, description, format, created_at FROM webhooks
            WHERE tenant_id = ${t} ${keyAfter('id', after)} ORDER BY id LIMIT ${limit}`,
      )
    ).map((w) => ({
      key: w.id as string,
      line: {
        type: 'webhook',
        id: w.id,
        url: w.url,
        events: w.events,
        active: w.active,
        description: w.description ?? null,
        format: w.format,
        created_at: iso(w.created_at),
      } satisfies ExportedLine<'webhook'>,
    })),
};

/** In this order in the file: spaces before the memories that name them, agents before their policies. */
export const SECTIONS: Section[] = [spaces, agents, packs, policies, memories, triples, webhooks];
