/** @jsxImportSource hono/jsx */
import { streamSSE } from 'hono/streaming';
import { decideVerb } from '../actions/verbs';
import { exportAuditVerb, listAuditVerb, verifyAuditVerb } from '../audit/verbs';
import { runStream } from '../events/stream';
import { openStreamVerb } from '../events/verbs';
import { download } from '../../shared/platform/http/download';
import { AppError } from '../../shared/platform/contract/errors';
import { type ConsoleContext, formOf, fromHtmx } from './http';
import { AuditPage } from './views/audit';
import { cardFor, cardsIn } from './cards';
import { ApprovalCard, DecidedNotice } from './views/approval-card';
import { INBOX_STATES, InboxCount, InboxPage, type InboxStatus } from './views/inbox';
import { onSessionEnd } from './live';
import { sessionOpen } from './session';
import { tenantOf as ctx, viewerOf } from './viewer';

const INBOX_PAGE = 25;

/** A refusal's text as the API would answer it, for the page to show. */
const refusalOf = (err: unknown): string => {
  if (!(err instanceof AppError)) throw err;
  const retry = err.extra.retry_after;
  return typeof retry === 'number' ? `${err.message} (${retry} s)` : err.message;
};

export async function inbox(c: ConsoleContext, refusals?: Map<string, string>, status = 200) {
  const wanted = c.req.query('status');
  const state: InboxStatus = INBOX_STATES.find((s) => s.status === wanted)?.status ?? 'pending_review';
  const t = ctx(c);
  const { cards, total } = await cardsIn(t, state, INBOX_PAGE);
  return c.html(
    <InboxPage viewer={viewerOf(c)} status={state} items={cards} total={total} live={openStreamVerb.allows(t)} refusals={refusals} />,
    status as 200,
  );
}

/** The count of a tab after a card left it, swapped in out of band. */
async function countOf(c: ConsoleContext, tab: InboxStatus) {
  const t = ctx(c);
  const { total } = await cardsIn(t, tab, 1);
  const live = tab === 'pending_review' && openStreamVerb.allows(t);
  return <InboxCount status={tab} total={total} shown={Math.min(total, INBOX_PAGE)} live={live} oob />;
}

/**
 * A decision, through the verb of POST /v1/approvals/{approval_id}/decision with the same input
 * schema, so the same rules refuse the same things. htmx gets back, in the card's place, what was
 * decided when the decision closed it (the card leaves the pending tab, its count swapped in out
 * of band), else the card with the refusal or how far the approvals stand; a plain form post gets
 * the inbox (with the refusal on its card) or a redirect to it.
 */
export async function decide(c: ConsoleContext) {
  const approvalId = c.req.param('approval_id') ?? '';
  const form = await formOf(c);
  const t = ctx(c);
  const input = {
    approval_id: approvalId,
    decision: form.decision || 'approve',
    ...(form.reason ? { reason: form.reason } : {}),
    ...(form.confirmation ? { confirmation: form.confirmation } : {}),
  };
  let refusal: string | undefined;
  let decided: Awaited<ReturnType<typeof decideVerb>> | undefined;
  let status = 200;
  try {
    decided = await decideVerb(t, input);
  } catch (err) {
    refusal = refusalOf(err);
    status = (err as AppError).status;
    if (status === 404) throw err;
  }
  if (fromHtmx(c)) {
    if (decided && decided.status !== 'pending_review') {
      const tab = INBOX_STATES.find((s) => s.status === form.tab && (s.status === 'pending_review' || s.status === 'team'))?.status;
      // A decided memory is no longer held (approved: stored; denied: discarded), so it has no card to read.
      const action = 'kind' in decided && decided.kind === 'memory' ? null : (await cardFor(t, approvalId)).action;
      return c.html(
        <>
          <DecidedNotice approvalId={approvalId} action={action} denied={decided.decision === 'deny'} />
          {tab ? await countOf(c, tab) : null}
        </>,
      );
    }
    const item = await cardFor(t, approvalId);
    const outcome = decided ? `Your approval is recorded: ${decided.approvals} of ${decided.approvals_required} approvals` : undefined;
    return c.html(<ApprovalCard item={item} csrfToken={c.get('session').csrfToken} refusal={refusal} outcome={outcome} tab={form.tab} />);
  }
  if (refusal) return inbox(c, new Map([[approvalId, refusal]]), status);
  return c.redirect('/console/approvals', 303);
}

/**
 * Each `action.pending_review` event of the tenant, as a card for htmx's SSE extension to append,
 * and each `action.decided` one (decided elsewhere: the API, another tab, expiry) as the removal of
 * its card, both with the inbox's count swapped in out of band. The stream lasts as long as its
 * session: sign-out ends it at once in this process, and every heartbeat it checks the session is
 * still open.
 */
export async function inboxStream(c: ConsoleContext) {
  const t = ctx(c);
  const open = await openStreamVerb(t, { types: 'action.pending_review,action.decided' });
  const { csrfToken, idHash } = c.get('session');
  const { services } = t;
  return streamSSE(c, async (sse) => {
    const client = new AbortController();
    const end = () => client.abort();
    sse.onAbort(end);
    if (sse.aborted) end();
    const leave = onSessionEnd(services.eventBus, idHash, end);
    const check = setInterval(() => {
      sessionOpen(services, idHash).then(
        (still) => still || end(),
        () => {},
      );
    }, services.config.EVENT_STREAM_HEARTBEAT_MS);
    const sink = {
      write: async (text: string) => {
        for (const block of text.split('\n\n')) {
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (!data) continue;
          const event = JSON.parse(data) as {
            type: string;
            data: { action_id: string; action: string; status: string; approver_id?: string; reason: string | null };
          };
          const actionId = event.data.action_id;
          const { total } = await cardsIn(t, 'pending_review', 1);
          const count = String(<InboxCount status="pending_review" total={total} shown={Math.min(total, INBOX_PAGE)} live oob />);
          if (event.type === 'action.decided') {
            const d = event.data;
            const expired = !d.approver_id && d.reason === 'expired';
            const notice = <DecidedNotice approvalId={actionId} action={d.action} denied={d.status === 'denied'} by={d.approver_id} expired={expired} oob />;
            await sse.writeSSE({ event: 'pending', data: String(notice) + count });
            continue;
          }
          const item = await cardFor(t, actionId);
          await sse.writeSSE({ event: 'pending', data: String(<ApprovalCard item={item} csrfToken={csrfToken} tab="pending_review" />) + count });
        }
      },
    };
    const done = runStream(open, sink, client.signal);
    services.waitUntil?.(done);
    try {
      await done;
    } finally {
      clearInterval(check);
      leave();
    }
  });
}

const auditFilters = (c: ConsoleContext) => {
  const q = c.req.query();
  return { since: q.since ?? '', until: q.until ?? '', event_type: q.event_type ?? '' };
};

const auditQuery = (filters: Record<string, string>) => Object.fromEntries(Object.entries(filters).filter(([, v]) => v));

export async function audit(c: ConsoleContext, verified?: Awaited<ReturnType<typeof verifyAuditVerb>>, problem?: string) {
  const filters = auditFilters(c);
  const t = ctx(c);
  let listed: Awaited<ReturnType<typeof listAuditVerb>>;
  try {
    listed = await listAuditVerb(t, { ...auditQuery(filters), limit: 100 });
  } catch (err) {
    // Filters the list refuses: the refusal, over the unfiltered list.
    problem = refusalOf(err);
    listed = await listAuditVerb(t, { limit: 100 });
  }
  return c.html(<AuditPage viewer={viewerOf(c)} listed={listed} filters={filters} verified={verified} problem={problem} />);
}

/** POST: verifies the chain (as `GET /v1/audit/verify`) and shows the result, or its refusal, on the audit page. */
export async function auditVerifyPage(c: ConsoleContext) {
  let verified: Awaited<ReturnType<typeof verifyAuditVerb>>;
  try {
    verified = await verifyAuditVerb(ctx(c), {});
  } catch (err) {
    return audit(c, undefined, refusalOf(err));
  }
  return audit(c, verified);
}

export async function auditExport(c: ConsoleContext) {
  const t = ctx(c);
  const file = await exportAuditVerb(t, auditQuery(auditFilters(c)));
  return download(c as never, { ...file, name: 'audit', extension: file.format, now: t.now });
}
