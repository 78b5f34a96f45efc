import { sql } from 'drizzle-orm';
import { type DbOrTx, pgArray, rows } from '../../shared/platform/db';
import { newId } from '../../shared/platform/ids';

type Data = Record<string, unknown>;
const arr = (v: unknown) => pgArray(Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const text = (v: unknown) => (typeof v === 'string' ? v : null);
const json = (v: unknown, fallback: unknown) => JSON.stringify(v ?? fallback);

/**
 * Restores one non-memory record of a bundle into the tenant, as its own family would store it,
 * and answers what it became (the target id), or null when the tenant already has one of that
 * name (a policy, agent or pack is its name within the tenant): then nothing is written.
 */
export async function restore(
  tx: DbOrTx,
  tenantId: string,
  now: Date,
  kind: 'space' | 'policy' | 'agent' | 'pack' | 'triple',
  d: Data,
): Promise<string | null> {
  const at = now.toISOString();
  switch (kind) {
    case 'space': {
      const id = crypto.randomUUID();
      await tx.execute(sql`INSERT INTO context_spaces (id, owner_tenant_id, name, description, allowed_agent_ids, allowed_tenant_ids, tags, created_at, updated_at)
        VALUES (${id}::uuid, ${tenantId}, ${String(d.name ?? 'Imported space')}, ${text(d.description)}, ${arr(d.allowed_agent_ids)}::text[], '{}'::text[], ${arr(d.tags)}::text[], ${at}, ${at})`);
      return id;
    }
    case 'policy': {
      const id = newId('policy');
      const [row] = await rows<{ id: string }>(
        tx,
        sql`INSERT INTO policies (id, tenant_id, name, agent_id, description, step_types, whitelisted_domains, rules, enabled, version, created_at, updated_at)
            VALUES (${id}, ${tenantId}, ${String(d.name)}, ${text(d.agent_id)}, ${text(d.description)}, ${arr(d.step_types)}::text[], ${arr(d.whitelisted_domains)}::text[],
                    ${json(d.rules, [])}::jsonb, ${d.enabled !== false}, 1, ${at}, ${at})
            ON CONFLICT DO NOTHING RETURNING id`,
      );
      return row?.id ?? null;
    }
    case 'agent': {
      const [row] = await rows<{ agent_id: string }>(
        tx,
        sql`INSERT INTO runtime_agents (tenant_id, agent_id, name, description, provider, model, instructions, capabilities, status, created_at, updated_at)
            VALUES (${tenantId}, ${String(d.agent_id)}, ${String(d.name ?? d.agent_id)}, ${text(d.description)}, ${String(d.provider)}, ${String(d.model)},
                    ${text(d.instructions)}, ${arr(d.capabilities)}::text[], ${String(d.status ?? 'active')}, ${at}, ${at})
            ON CONFLICT DO NOTHING RETURNING agent_id`,
      );
      return row?.agent_id ?? null;
    }
    case 'pack': {
      const id = newId('capability');
      const [row] = await rows<{ id: string }>(
        tx,
        sql`INSERT INTO runtime_capabilities (id, tenant_id, name, description, tools, risk_levels, created_at)
            VALUES (${id}, ${tenantId}, ${String(d.name)}, ${text(d.description)}, ${json(d.tools, [])}::jsonb, ${json(d.risk_levels, {})}::jsonb, ${at})
            ON CONFLICT DO NOTHING RETURNING id`,
      );
      return row?.id ?? null;
    }
    case 'triple': {
      const s = d.subject as Data;
      const o = d.object as Data;
      // The exported names are already normalized, as the knowledge family stores them.
      const named = [
        { id: crypto.randomUUID(), name: String(s.name), entity_type: String(s.type ?? 'concept') },
        { id: crypto.randomUUID(), name: String(o.name), entity_type: String(o.type ?? 'concept') },
      ];
      const wanted = named[0].name === named[1].name ? [named[0]] : named;
      // An entity is its name within the tenant: an existing one is reused, as POST /v1/knowledge/triples does.
      const entities = await rows<{ id: string; name: string }>(
        tx,
        sql`INSERT INTO knowledge_entities AS e (id, tenant_id, name, entity_type, metadata, created_at)
            SELECT w.id, ${tenantId}, w.name, w.entity_type, '{}'::jsonb, ${at}
            FROM jsonb_to_recordset(${JSON.stringify(wanted)}::jsonb) AS w(id uuid, name text, entity_type text) ORDER BY w.name
            ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name
            RETURNING e.id, e.name`,
      );
      const idOf = (name: string) => entities.find((e) => e.name === name)!.id;
      const id = crypto.randomUUID();
      await tx.execute(sql`INSERT INTO knowledge_triples (id, tenant_id, subject_id, predicate, object_id, confidence, source_memory_id, metadata, created_at)
        VALUES (${id}::uuid, ${tenantId}, ${idOf(named[0].name)}::uuid, ${String(d.predicate)}, ${idOf(named[1].name)}::uuid,
                ${typeof d.confidence === 'number' ? d.confidence : 1}, NULL, ${json(d.metadata, {})}::jsonb, ${at})`);
      return id;
    }
  }
}
