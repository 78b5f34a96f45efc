import { AppError, type ErrorCode } from './errors';

export const TIERS = ['free', 'starter', 'pro', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

/** `null` means unlimited. */
export interface TierLimits {
  api_calls: number | null;
  memories: number | null;
  rollbacks: number | null;
  custom_policies: number | null;
  audit_retention_days: number;
  requests_per_minute: number;
}

export type Feature =
  | 'spaces'
  | 'sharing'
  | 'knowledge_graph'
  | 'traces'
  | 'replay'
  | 'audit_export'
  | 'audit_verify'
  | 'teams'
  | 'webhooks'
  | 'compensations'
  | 'draft_policies'
  | 'agent_scoped_policies'
  | 'eval_gate'
  | 'eval_drift'
  | 'eval_drift_detail'
  | 'cortex'
  | 'control_dashboard'
  | 'team_approvals'
  | 'enterprise_approvals'
  | 'cortex_insights';

interface TierSpec {
  limits: TierLimits;
  features: Feature[];
  /** Rough list price, used only for spend estimates in /v1/usage. */
  monthly_usd: number;
}

const starterFeatures: Feature[] = ['sharing', 'audit_export', 'draft_policies', 'control_dashboard', 'team_approvals', 'eval_drift'];
const proFeatures: Feature[] = [
  ...starterFeatures,
  'spaces',
  'knowledge_graph',
  'traces',
  'replay',
  'audit_verify',
  'teams',
  'webhooks',
  'compensations',
  'agent_scoped_policies',
  'eval_gate',
  'eval_drift_detail',
  'cortex',
];

/** The one table of tier limits and features (docs/architecture.md#tiers-and-quotas). */
export const tiers: Record<Tier, TierSpec> = {
  free: {
    limits: { api_calls: 5_000, memories: 5_000, rollbacks: 10, custom_policies: 0, audit_retention_days: 7, requests_per_minute: 600 },
    features: [],
    monthly_usd: 0,
  },
  starter: {
    limits: { api_calls: 50_000, memories: 50_000, rollbacks: 50, custom_policies: 5, audit_retention_days: 14, requests_per_minute: 1_000 },
    features: starterFeatures,
    monthly_usd: 29,
  },
  pro: {
    limits: { api_calls: 500_000, memories: 500_000, rollbacks: null, custom_policies: 25, audit_retention_days: 30, requests_per_minute: 5_000 },
    features: proFeatures,
    monthly_usd: 99,
  },
  enterprise: {
    limits: { api_calls: null, memories: null, rollbacks: null, custom_policies: null, audit_retention_days: 90, requests_per_minute: 10_000 },
    features: [...proFeatures, 'enterprise_approvals', 'cortex_insights'],
    monthly_usd: 499,
  },
};

const allFeatures: Feature[] = [...new Set(TIERS.flatMap((t) => tiers[t].features))];

const flagsByTier = Object.fromEntries(
  TIERS.map((t) => [t, Object.freeze(Object.fromEntries(allFeatures.map((f) => [f, tiers[t].features.includes(f)])))]),
) as Record<Tier, Readonly<Record<Feature, boolean>>>;

/** Every feature with whether the tier has it (usage reports, dashboard); computed once per tier. */
export function featureFlags(tier: Tier): Readonly<Record<Feature, boolean>> {
  return flagsByTier[tier];
}

export function hasFeature(tier: Tier, feature: Feature): boolean {
  return tiers[tier].features.includes(feature);
}

/** The lowest tier that has a feature, for `required_tier` in 403 bodies. */
export function requiredTier(feature: Feature): Tier {
  return TIERS.find((t) => hasFeature(t, feature)) ?? 'enterprise';
}

/**
 * The one rule for tier refusals (docs/architecture.md#tier-refusals): a feature the tier lacks is 403
 * FEATURE_NOT_AVAILABLE, except where the contract names another code for it: TIER_REQUIRED for the
 * audit export, and the control plane's `svc_ram.v1.tier.feature_required` for its features:
 * policies and approval modes (PUT /v1/control/settings and POST /v1/actions refuse a missing
 * approval mode with the same code). Every refusal carries `feature`, `required_tier` and `current_tier`.
 */
const specNamedRefusals: Partial<Record<Feature, ErrorCode>> = {
  audit_export: 'TIER_REQUIRED',
  draft_policies: 'svc_ram.v1.tier.feature_required',
  agent_scoped_policies: 'svc_ram.v1.tier.feature_required',
  team_approvals: 'svc_ram.v1.tier.feature_required',
  enterprise_approvals: 'svc_ram.v1.tier.feature_required',
};

export function tierRefusal(feature: Feature): { code: ErrorCode; requiredTier: Tier } {
  return { code: specNamedRefusals[feature] ?? 'FEATURE_NOT_AVAILABLE', requiredTier: requiredTier(feature) };
}

export function requireFeature(tier: Tier, feature: Feature): void {
  if (hasFeature(tier, feature)) return;
  const { code, requiredTier: needed } = tierRefusal(feature);
  throw new AppError(code, `${feature} requires the ${needed} tier or higher`, { feature, required_tier: needed, current_tier: tier });
}
