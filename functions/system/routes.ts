import { json, optionalKeyRoute, publicRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';

const tags = ['System'];

export const healthzRoute = publicRoute({
  operationId: 'system.liveness',
  method: 'get',
  path: '/healthz',
  tags,
  summary: 'Liveness probe',
  description: 'Always 200 while the process runs; touches no dependency.',
  responses: { 200: json(s.Healthz, 'Alive') },
});

export const healthRoute = optionalKeyRoute({
  operationId: 'system.health',
  method: 'get',
  path: '/health',
  tags,
  summary: 'Readiness and dependency health',
  description:
    "Public: overall status only. With a key: database and Redis checks with latencies, the embedding provider's configuration, and warnings. `degraded` when Redis is unreachable or the embedding provider is not configured; 503 when the database is unreachable.",
  responses: { 200: json(s.Health, 'Healthy or degraded'), 503: json(s.Health, 'Unhealthy') },
});

export const statusRoute = optionalKeyRoute({
  operationId: 'system.status',
  method: 'get',
  path: '/v1/status',
  tags,
  summary: 'Service status',
  description: 'Public: version, status and time. With a key: also uptime, the memories stored by the account and the average response time of this instance.',
  responses: { 200: json(s.Status, 'Status; more fields with a key') },
});
