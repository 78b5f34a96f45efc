import { json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';

const tags = ['Cortex'];
const experimental = true;
const feature = 'cortex';

export const getConfigRoute = keyRoute({
  operationId: 'cortex.getConfig',
  method: 'get',
  path: '/v1/cortex/config',
  tags,
  experimental,
  feature,
  summary: 'The Cortex config of the account',
  description: 'The defaults (off, threshold 0.90, decay after 30 days) until it is first changed.',
  responses: { 200: json(s.Config, 'The config') },
});

const updateDoc = {
  tags,
  experimental,
  feature,
  summary: 'Change the Cortex config',
  description:
    'Any field may be left out. `consolidation_threshold` 0.5 to 1.0, `decay_age_days` 1 to 365; enabling insights needs Enterprise (403 FEATURE_NOT_AVAILABLE).',
  request: { body: jsonBody(s.ConfigPatch) },
  responses: { 200: json(s.Config, 'The config as changed') },
} as const;

export const patchConfigRoute = keyRoute({ operationId: 'cortex.patchConfig', method: 'patch', path: '/v1/cortex/config', ...updateDoc });
export const putConfigRoute = keyRoute({ operationId: 'cortex.putConfig', method: 'put', path: '/v1/cortex/config', ...updateDoc });

export const statusRoute = keyRoute({
  operationId: 'cortex.status',
  method: 'get',
  path: '/v1/cortex/status',
  tags,
  experimental,
  feature,
  summary: 'Whether Cortex runs, its last run and config',
  responses: { 200: json(s.Status, 'The status') },
});

export const runRoute = keyRoute({
  operationId: 'cortex.run',
  method: 'post',
  path: '/v1/cortex/run',
  tags,
  experimental,
  feature,
  summary: 'Run the Cortex maintenance passes now',
  description:
    'Consolidates near duplicates (the newer supersedes the older, nothing is deleted), reinforces frequently recalled memories and decays old unused ones. Every change is an ordinary memory update by the actor `cortex` (memory event, audit entry, webhook), so a run shows in replay and a rollback undoes it. With `dry_run=true` nothing is written and `changes` lists what would change.',
  request: { query: s.RunQuery },
  responses: { 200: json(s.RunResult, 'What the run changed (or would change)') },
});

export const insightsRoute = keyRoute({
  operationId: 'cortex.insights',
  method: 'get',
  path: '/v1/cortex/insights',
  tags,
  experimental,
  feature: 'cortex_insights',
  summary: 'The insights Cortex generated (Enterprise)',
  description:
    'Live memories a Cortex run wrote as insights, newest first: one per cluster of at least 3 live memories of a space with pairwise cosine ≥ 0.75, its text taken from the most central memory and the cluster size, tagged `insight` and linked (`derived_from`) to its sources. Runs generate them when `insight_generation_enabled` is on.',
  request: { query: s.InsightsQuery },
  responses: { 200: json(s.InsightList, 'A page of insights') },
});
