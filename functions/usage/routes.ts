import { json, keyRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';

const tags = ['Usage'];

export const usageRoute = keyRoute({
  operationId: 'usage.get',
  confinable: true,
  method: 'get',
  path: '/v1/usage',
  tags,
  summary: 'Quota usage for the current period',
  description: 'Counters are per billing period (YYYY-MM, UTC). This request itself is counted.',
  responses: { 200: json(s.Usage, 'Usage report') },
});

export const dashboardRoute = keyRoute({
  operationId: 'usage.dashboard',
  method: 'get',
  path: '/v1/dashboard',
  tags,
  summary: 'Account overview',
  description:
    "Tier, features, memories stored, API calls today, the period's limits and how much of each is used (percent and pressure), for the current billing period (YYYY-MM, UTC).",
  responses: { 200: json(s.Dashboard, 'Dashboard') },
});

export const milestonesRoute = keyRoute({
  operationId: 'usage.milestones',
  method: 'get',
  path: '/v1/milestones',
  tags,
  summary: 'Account milestones reached',
  description: 'The firsts the account has reached (first memory, search, rollback, replay, space, share, ...), each once, with when it happened.',
  responses: { 200: json(s.MilestoneList, 'Milestones, oldest first') },
});
