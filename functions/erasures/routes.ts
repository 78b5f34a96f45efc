import { errors as errorsOf, json, jsonBody, keyRoute } from '../../shared/platform/http/openapi';
import * as s from './schemas';

const tags = ['Erasures'];
const signing =
  'The receipt is signed with the key that signs traces: RSA-PSS (SHA-256, MGF1-SHA-256, salt 32) over the RFC 8785 (JCS) bytes of the receipt without `signature`; docs/security.md in the repository verifies one with openssl.';

export const eraseRoute = keyRoute({
  operationId: 'erasures.create',
  method: 'post',
  path: '/v1/erasures',
  tags,
  summary: 'Erase memories everywhere engram keeps them',
  description: `Selects your memories, live, deleted or expired, by \`memory_ids\`, \`agent_id\`, \`tags\` (any of), \`space_id\` and \`before\` (created before), all given ones together (\`space_id\` must name a space of yours, else 404), plus the Cortex insights drawn from them, and erases their content from every place engram keeps it: rows, history, replay, search postings, links, knowledge links, stream events, queued jobs and idempotent replays. The audit chain keeps its entries (ids, hashes) and verifies; one \`erasure.completed\` entry and event record the erasure. Afterwards the memories are 404, replay leaves them out and a rollback cannot bring them back. A selector that matches nothing answers a receipt with zero counts. ${signing} With \`dry_run\` nothing is written and the receipt is not kept.`,
  request: { body: jsonBody(s.EraseBody) },
  responses: { 201: json(s.Receipt, 'The signed receipt'), ...errorsOf(400, 404) },
});

export const listRoute = keyRoute({
  operationId: 'erasures.list',
  method: 'get',
  path: '/v1/erasures',
  tags,
  summary: 'Your erasure receipts, newest first',
  description: `Every kept receipt of POST /v1/erasures and DELETE /v1/account, as it was answered (dry runs are not kept). ${signing}`,
  request: { query: s.ListQuery },
  responses: { 200: json(s.ReceiptList, 'A page of receipts') },
});

export const getRoute = keyRoute({
  operationId: 'erasures.get',
  method: 'get',
  path: '/v1/erasures/{erasure_id}',
  tags,
  summary: 'One erasure receipt',
  description: signing,
  request: { params: s.ErasureParams },
  responses: { 200: json(s.Receipt, 'The signed receipt'), ...errorsOf(404) },
});

export const accountRoute = keyRoute({
  operationId: 'erasures.account',
  method: 'delete',
  path: '/v1/account',
  tags,
  summary: 'Delete the account and erase all its data',
  description: `\`confirm\` must be the account's e-mail address (else 400 and nothing happens); only an unrestricted key may do it (403 FORBIDDEN). Erases every memory as POST /v1/erasures does, deletes the rest of the account's data (spaces, shares, knowledge graph, policies, agents, missions, actions, webhooks, traces, evals, teams it owns), keeps the audit chain and the erasure receipts, and revokes every key, this one included, in the same transaction: the answer is the last call the key makes. ${signing}`,
  request: { body: jsonBody(s.AccountDeleteBody) },
  responses: { 200: json(s.Receipt, 'The signed receipt of the account erasure'), ...errorsOf(400, 403) },
});
