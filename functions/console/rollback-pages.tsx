/** @jsxImportSource hono/jsx */
import { CONFIRMATION_PHRASE } from '../../shared/control/decide';
import type { AppError } from '../../shared/platform/contract/errors';
import { historyVerb, previewVerb, rollbackVerb } from '../rollback/verbs';
import { type ConsoleContext, formOf } from './http';
import { messageOf, tenantOf, viewerOf } from './viewer';
import { RollbackPage } from './views/rollback';

async function render(c: ConsoleContext, props: Omit<Parameters<typeof RollbackPage>[0], 'viewer' | 'recent'>, status = 200) {
  const recent = await historyVerb(tenantOf(c), { limit: 10 });
  return c.html(<RollbackPage viewer={viewerOf(c)} recent={recent} {...props} />, status as 200);
}

export const rollbackPage = (c: ConsoleContext) => render(c, {});

/** What `GET /v1/rollback/preview` answers, with the confirm form pinned to its absolute time. */
export async function rollbackPreview(c: ConsoleContext) {
  const target = c.req.query('target') ?? '';
  try {
    return await render(c, { target, previewed: await previewVerb(tenantOf(c), { target }) });
  } catch (err) {
    return render(c, { target, problem: messageOf(err) }, (err as AppError).status);
  }
}

/** `POST /v1/rollback`, once the person typed the phrase; the result on the same page. */
export async function rollbackRun(c: ConsoleContext) {
  const form = await formOf(c);
  const target = form.target ?? '';
  const ctx = tenantOf(c);
  try {
    if (form.confirmation !== CONFIRMATION_PHRASE) {
      const previewed = await previewVerb(ctx, { target });
      return await render(c, { target, previewed, problem: `Type ${CONFIRMATION_PHRASE} to confirm the rollback.` }, 400);
    }
    return await render(c, { target, done: await rollbackVerb(ctx, { target }) });
  } catch (err) {
    return render(c, { target, problem: messageOf(err) }, (err as AppError).status);
  }
}
