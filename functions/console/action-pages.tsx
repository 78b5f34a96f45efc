/** @jsxImportSource hono/jsx */
import { explainVerb, listActionsVerb } from '../actions/verbs';
import type { ConsoleContext } from './http';
import { tenantOf, viewerOf } from './viewer';
import { ActionPage, ActionsPage } from './views/actions';

const PAGE = 50;

/** The tenant's submitted actions, newest first, a page at a time: the list verb (`GET /v1/actions`). */
export async function actionsPage(c: ConsoleContext) {
  const offset = Math.max(0, Math.min(1_000_000, Number.parseInt(c.req.query('offset') ?? '0', 10) || 0));
  const { actions, total } = await listActionsVerb(tenantOf(c), { limit: PAGE, offset });
  return c.html(<ActionsPage viewer={viewerOf(c)} rows={actions} total={total} offset={offset} limit={PAGE} />);
}

/** One action and its explanation (`GET /v1/actions/{action_id}/explain`). */
export async function actionPage(c: ConsoleContext) {
  const explained = await explainVerb(tenantOf(c), { action_id: c.req.param('action_id') });
  return c.html(<ActionPage viewer={viewerOf(c)} explained={explained} />);
}
