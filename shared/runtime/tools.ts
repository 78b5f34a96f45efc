import { and, eq, inArray } from 'drizzle-orm';
import { type AgentStatus, type RiskLevel, runtimeAgents, runtimeCapabilities } from '../../schema/runtime';
import type { DbOrTx } from '../platform/data/db';

/** One tool a registered runtime agent may use, from one of its capability packs. */
export interface AgentTool {
  /** As the pack names it: an action (`github.create_issue`) or a connector (`github`, allowing every `github.*` action). */
  name: string;
  description: string;
  /** The pack's risk level for the tool; null when the pack gives none. */
  riskLevel: RiskLevel | null;
  /** The capability pack it comes from. */
  capability: string;
}

export interface RuntimeAgentTools {
  agentId: string;
  status: AgentStatus;
  tools: AgentTool[];
}

/**
 * The tools a registered runtime agent may use (capability packs restrict its actions), or null when `agentId` is not a runtime agent of the tenant (such actions are not
 * restricted). A tool in several packs appears once per pack. For the actions family: an action is
 * allowed when a tool is named after it or after its connector, and that tool's risk level feeds
 * its risk score.
 */
export async function runtimeAgentTools(db: DbOrTx, tenantId: string, agentId: string): Promise<RuntimeAgentTools | null> {
  const [agent] = await db
    .select({ status: runtimeAgents.status, capabilities: runtimeAgents.capabilities })
    .from(runtimeAgents)
    .where(and(eq(runtimeAgents.tenantId, tenantId), eq(runtimeAgents.agentId, agentId)));
  if (!agent) return null;
  const packs = agent.capabilities.length
    ? await db
        .select({ name: runtimeCapabilities.name, tools: runtimeCapabilities.tools, riskLevels: runtimeCapabilities.riskLevels })
        .from(runtimeCapabilities)
        .where(and(eq(runtimeCapabilities.tenantId, tenantId), inArray(runtimeCapabilities.name, agent.capabilities)))
        .orderBy(runtimeCapabilities.name)
    : [];
  const tools = packs.flatMap((p) =>
    p.tools.map((t) => ({ name: t.name, description: t.description, riskLevel: p.riskLevels[t.name] ?? null, capability: p.name })),
  );
  return { agentId, status: agent.status, tools };
}

/** The tool of `tools` that allows `action` (`connector.verb`): one named after the action, else after its connector. */
export function toolFor(tools: AgentTool[], action: string, connector?: string | null): AgentTool | null {
  const prefix = connector ?? (action.includes('.') ? action.slice(0, action.indexOf('.')) : null);
  return tools.find((t) => t.name === action) ?? (prefix ? (tools.find((t) => t.name === prefix) ?? null) : null);
}
