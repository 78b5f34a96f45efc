/** @jsxImportSource hono/jsx */
import type { Card } from '../cards';
import { ApprovalCard } from './approval-card';
import { Layout, type Viewer } from './layout';

export const INBOX_STATES = [
  { status: 'pending_review', label: 'Pending' },
  { status: 'approved', label: 'Approved' },
  { status: 'denied', label: 'Denied' },
  { status: 'executed', label: 'Executed' },
  { status: 'failed', label: 'Failed' },
  { status: 'team', label: 'Team reviews' },
] as const;
export type InboxStatus = (typeof INBOX_STATES)[number]['status'];

/**
 * How many actions the tab holds; the live stream sends it again with each new card, swapped in
 * out of band (`oob`), so the count follows the cards.
 */
export function InboxCount(props: { status: InboxStatus; total: number; shown: number; live: boolean; oob?: boolean }) {
  return (
    <p class="hint" id="inbox-count" aria-live="polite" {...(props.oob ? { 'hx-swap-oob': 'true' } : {})}>
      {props.total} {props.status === 'team' ? 'waiting for your review' : props.status.replace('_', ' ')}
      {props.total > props.shown ? `, the first ${props.shown} shown` : ''}
      {props.live ? ' · new ones appear here as they arrive' : ''}
    </p>
  );
}

/** The inbox: one status at a time (pending first), new pending actions arriving over SSE. */
export function InboxPage(props: { viewer: Viewer; status: InboxStatus; items: Card[]; total: number; live: boolean; refusals?: Map<string, string> }) {
  const pending = props.status === 'pending_review';
  return (
    <Layout title="Approvals" current="/console/approvals" viewer={props.viewer}>
      <h1>Approvals</h1>
      <p class="lead">Actions your agents asked to take that a policy held for a person. Approve or deny each with a reason.</p>
      <ul class="tabs" aria-label="Status">
        {INBOX_STATES.map((s) => (
          <li>
            <a href={`/console/approvals?status=${s.status}`} aria-current={s.status === props.status ? 'page' : undefined}>
              {s.label}
            </a>
          </li>
        ))}
      </ul>
      <InboxCount status={props.status} total={props.total} shown={props.items.length} live={pending && props.live} />
      <div
        id="cards"
        {...(pending && props.live ? { 'hx-ext': 'sse', 'sse-connect': '/console/approvals/stream', 'sse-swap': 'pending', 'hx-swap': 'beforeend' } : {})}
      >
        {props.items.map((item) => (
          <ApprovalCard item={item} csrfToken={props.viewer.csrfToken} refusal={props.refusals?.get(item.approval_id)} tab={props.status} />
        ))}
      </div>
      {props.items.length === 0 ? <p class="empty">Nothing here.</p> : null}
    </Layout>
  );
}
