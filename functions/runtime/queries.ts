import { and, asc, count, desc, eq, gt, inArray, type SQL } from 'drizzle-orm';
import {
  ACTIVE_MISSION_STATUSES,
  type AgentStatus,
  type InterventionType,
  type MissionStatus,
  runtimeAgents,
  runtimeCapabilities,
  runtimeCheckpoints,
  runtimeInterventions,
  runtimeMissions,
} from '../../schema/runtime';
import type { DbOrTx } from '../../shared/platform/data/db';
import type { PageInput } from '../../shared/platform/data/pagination';

export type AgentRow = typeof runtimeAgents.$inferSelect;
export type MissionRow = typeof runtimeMissions.$inferSelect;
export type CheckpointRow = typeof runtimeCheckpoints.$inferSelect;

async function paged<T>(rowsOf: Promise<T[]>, countOf: Promise<{ n: number }[]>) {
  const [page, [{ n }]] = await Promise.all([rowsOf, countOf]);
  return { page, total: Number(n) };
}

// ---- capability packs

/** Inserts a pack; null when the tenant already has one of that name. */
export async function insertCapability(db: DbOrTx, row: typeof runtimeCapabilities.$inferInsert) {
  const [created] = await db.insert(runtimeCapabilities).values(row).onConflictDoNothing().returning();
  return created ?? null;
}

export function listCapabilities(db: DbOrTx, tenantId: string, page: PageInput) {
  const where = eq(runtimeCapabilities.tenantId, tenantId);
  return paged(
    db.select().from(runtimeCapabilities).where(where).orderBy(asc(runtimeCapabilities.name)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(runtimeCapabilities).where(where),
  );
}

/** Which of `names` are capability packs of the tenant. */
export async function existingCapabilities(db: DbOrTx, tenantId: string, names: string[]): Promise<Set<string>> {
  if (!names.length) return new Set();
  const found = await db
    .select({ name: runtimeCapabilities.name })
    .from(runtimeCapabilities)
    .where(and(eq(runtimeCapabilities.tenantId, tenantId), inArray(runtimeCapabilities.name, names)));
  return new Set(found.map((r) => r.name));
}

// ---- agents

/** Inserts an agent; null when the tenant already has that agent_id. */
export async function insertAgent(db: DbOrTx, row: typeof runtimeAgents.$inferInsert) {
  const [created] = await db.insert(runtimeAgents).values(row).onConflictDoNothing().returning();
  return created ?? null;
}

/** An agent of the tenant; `lock` holds its row until the transaction ends (missions of it serialize on it). */
export async function agentOf(db: DbOrTx, tenantId: string, agentId: string, lock = false): Promise<AgentRow | null> {
  const query = db
    .select()
    .from(runtimeAgents)
    .where(and(eq(runtimeAgents.tenantId, tenantId), eq(runtimeAgents.agentId, agentId)));
  const [found] = lock ? await query.for('update') : await query;
  return found ?? null;
}

export function listAgents(db: DbOrTx, tenantId: string, filter: { status?: AgentStatus }, page: PageInput) {
  const where = and(eq(runtimeAgents.tenantId, tenantId), filter.status ? eq(runtimeAgents.status, filter.status) : undefined);
  return paged(
    db.select().from(runtimeAgents).where(where).orderBy(desc(runtimeAgents.createdAt), desc(runtimeAgents.agentId)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(runtimeAgents).where(where),
  );
}

export async function setAgentStatus(db: DbOrTx, tenantId: string, agentId: string, status: AgentStatus, at: Date): Promise<AgentRow> {
  const [updated] = await db
    .update(runtimeAgents)
    .set({ status, updatedAt: at })
    .where(and(eq(runtimeAgents.tenantId, tenantId), eq(runtimeAgents.agentId, agentId)))
    .returning();
  return updated;
}

export async function deleteAgent(db: DbOrTx, tenantId: string, agentId: string) {
  await db.delete(runtimeAgents).where(and(eq(runtimeAgents.tenantId, tenantId), eq(runtimeAgents.agentId, agentId)));
}

/** The queued, running and paused missions of some agents, newest first. */
export async function activeMissionsOf(db: DbOrTx, tenantId: string, agentIds: string[]) {
  if (!agentIds.length) return [];
  return db
    .select({ agentId: runtimeMissions.agentId, mission_id: runtimeMissions.id, goal: runtimeMissions.goal, status: runtimeMissions.status })
    .from(runtimeMissions)
    .where(
      and(eq(runtimeMissions.tenantId, tenantId), inArray(runtimeMissions.agentId, agentIds), inArray(runtimeMissions.status, [...ACTIVE_MISSION_STATUSES])),
    )
    .orderBy(desc(runtimeMissions.createdAt), desc(runtimeMissions.id));
}

/** Cancels an agent's active missions; returns the cancelled rows with the status each had. */
export async function cancelActiveMissions(db: DbOrTx, tenantId: string, agentId: string, at: Date) {
  const active = await db
    .select({ id: runtimeMissions.id, status: runtimeMissions.status })
    .from(runtimeMissions)
    .where(and(eq(runtimeMissions.tenantId, tenantId), eq(runtimeMissions.agentId, agentId), inArray(runtimeMissions.status, [...ACTIVE_MISSION_STATUSES])))
    .orderBy(asc(runtimeMissions.id))
    .for('update');
  if (!active.length) return [];
  await db
    .update(runtimeMissions)
    .set({ status: 'cancelled', updatedAt: at, endedAt: at })
    .where(
      and(
        eq(runtimeMissions.tenantId, tenantId),
        inArray(
          runtimeMissions.id,
          active.map((m) => m.id),
        ),
      ),
    );
  return active;
}

// ---- missions

export async function insertMission(db: DbOrTx, row: typeof runtimeMissions.$inferInsert): Promise<MissionRow> {
  const [created] = await db.insert(runtimeMissions).values(row).returning();
  return created;
}

/** A mission of the tenant; `lock` holds its row (transitions, checkpoints and rollbacks serialize on it). */
export async function missionOf(db: DbOrTx, tenantId: string, missionId: string, lock = false): Promise<MissionRow | null> {
  const query = db
    .select()
    .from(runtimeMissions)
    .where(and(eq(runtimeMissions.tenantId, tenantId), eq(runtimeMissions.id, missionId)));
  const [found] = lock ? await query.for('update') : await query;
  return found ?? null;
}

/** A mission under its row lock with its agent's status (null once the agent is deleted), in one statement: what a transition reads. */
export async function missionForTransition(db: DbOrTx, tenantId: string, missionId: string) {
  const [found] = await db
    .select({ mission: runtimeMissions, agentStatus: runtimeAgents.status })
    .from(runtimeMissions)
    .leftJoin(runtimeAgents, and(eq(runtimeAgents.tenantId, runtimeMissions.tenantId), eq(runtimeAgents.agentId, runtimeMissions.agentId)))
    .where(and(eq(runtimeMissions.tenantId, tenantId), eq(runtimeMissions.id, missionId)))
    .for('update', { of: runtimeMissions });
  return found ?? null;
}

export function listMissions(db: DbOrTx, tenantId: string, filter: { agent_id?: string; status?: MissionStatus }, page: PageInput) {
  const where: SQL[] = [eq(runtimeMissions.tenantId, tenantId)];
  if (filter.agent_id) where.push(eq(runtimeMissions.agentId, filter.agent_id));
  if (filter.status) where.push(eq(runtimeMissions.status, filter.status));
  return paged(
    db
      .select()
      .from(runtimeMissions)
      .where(and(...where))
      .orderBy(desc(runtimeMissions.createdAt), desc(runtimeMissions.id))
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ n: count() })
      .from(runtimeMissions)
      .where(and(...where)),
  );
}

export async function updateMission(db: DbOrTx, tenantId: string, missionId: string, set: Partial<typeof runtimeMissions.$inferInsert>): Promise<MissionRow> {
  const [updated] = await db
    .update(runtimeMissions)
    .set(set)
    .where(and(eq(runtimeMissions.tenantId, tenantId), eq(runtimeMissions.id, missionId)))
    .returning();
  return updated;
}

// ---- checkpoints

export async function insertCheckpoint(db: DbOrTx, row: typeof runtimeCheckpoints.$inferInsert): Promise<CheckpointRow> {
  const [created] = await db.insert(runtimeCheckpoints).values(row).returning();
  return created;
}

/** A checkpoint of one mission of the tenant (another mission's is null, as an unknown one). */
export async function checkpointOf(db: DbOrTx, tenantId: string, missionId: string, checkpointId: string): Promise<CheckpointRow | null> {
  const [found] = await db
    .select()
    .from(runtimeCheckpoints)
    .where(and(eq(runtimeCheckpoints.tenantId, tenantId), eq(runtimeCheckpoints.missionId, missionId), eq(runtimeCheckpoints.id, checkpointId)));
  return found ?? null;
}

export async function latestCheckpoint(db: DbOrTx, tenantId: string, missionId: string): Promise<CheckpointRow | null> {
  const [found] = await db
    .select()
    .from(runtimeCheckpoints)
    .where(and(eq(runtimeCheckpoints.tenantId, tenantId), eq(runtimeCheckpoints.missionId, missionId)))
    .orderBy(desc(runtimeCheckpoints.seq))
    .limit(1);
  return found ?? null;
}

export function listCheckpoints(db: DbOrTx, tenantId: string, missionId: string, page: PageInput) {
  const where = and(eq(runtimeCheckpoints.tenantId, tenantId), eq(runtimeCheckpoints.missionId, missionId));
  return paged(
    db.select().from(runtimeCheckpoints).where(where).orderBy(asc(runtimeCheckpoints.seq)).limit(page.limit).offset(page.offset),
    db.select({ n: count() }).from(runtimeCheckpoints).where(where),
  );
}

/** How many checkpoints of a mission were taken after `seq`. */
export async function countCheckpointsAfter(db: DbOrTx, tenantId: string, missionId: string, seq: number): Promise<number> {
  const [{ n }] = await db
    .select({ n: count() })
    .from(runtimeCheckpoints)
    .where(and(eq(runtimeCheckpoints.tenantId, tenantId), eq(runtimeCheckpoints.missionId, missionId), gt(runtimeCheckpoints.seq, seq)));
  return Number(n);
}

/** Deletes the checkpoints of a mission taken after `seq`; returns how many. */
export async function discardCheckpointsAfter(db: DbOrTx, tenantId: string, missionId: string, seq: number): Promise<number> {
  const gone = await db
    .delete(runtimeCheckpoints)
    .where(and(eq(runtimeCheckpoints.tenantId, tenantId), eq(runtimeCheckpoints.missionId, missionId), gt(runtimeCheckpoints.seq, seq)))
    .returning({ id: runtimeCheckpoints.id });
  return gone.length;
}

// ---- interventions

export async function insertIntervention(db: DbOrTx, row: typeof runtimeInterventions.$inferInsert) {
  const [created] = await db.insert(runtimeInterventions).values(row).returning();
  return created;
}

export function listInterventions(
  db: DbOrTx,
  tenantId: string,
  filter: { mission_id?: string; agent_id?: string; intervention_type?: InterventionType },
  page: PageInput,
) {
  const where: SQL[] = [eq(runtimeInterventions.tenantId, tenantId)];
  if (filter.mission_id) where.push(eq(runtimeInterventions.missionId, filter.mission_id));
  if (filter.agent_id) where.push(eq(runtimeInterventions.agentId, filter.agent_id));
  if (filter.intervention_type) where.push(eq(runtimeInterventions.interventionType, filter.intervention_type));
  return paged(
    db
      .select()
      .from(runtimeInterventions)
      .where(and(...where))
      .orderBy(desc(runtimeInterventions.createdAt), desc(runtimeInterventions.id))
      .limit(page.limit)
      .offset(page.offset),
    db
      .select({ n: count() })
      .from(runtimeInterventions)
      .where(and(...where)),
  );
}
