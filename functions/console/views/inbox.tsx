/** @jsxImportSource hono/jsx */
import { CONFIRMATION_PHRASE, isDestructive, SOLO_DELAY_MS } from '../../../shared/control/decide';
import type { Card } from '../cards';
import { CsrfField, Layout, Notice, type Viewer } from './layout';

export const INBOX_STATES = [
  { status: 'pending_review', label: 'Pending' },
  { status: 'approved', label: 'Approved' },
  { status: 'denied', label: 'Denied' },
  { status: 'executed', label: 'Executed' },
  { status: 'failed', label: 'Failed' },
  { status: 'team', label: 'Team reviews' },
] as const;
export type InboxStatus = (typeof INBOX_STATES)[number]['status'];

const WHO_DECIDES: Record<string, string> = {
  solo: 'You (this account)',
  team: 'Any member of a team this account belongs to (owner, admin or member), with their own key; you may approve your own action 10 minutes after submission',
  enterprise: 'This account and its team members (not readonly)',
};

/** One action waiting for (or past) a decision: what, why it was held, by whom, and the decision form. */
export function ApprovalCard(props: { item: Card; csrfToken: string; refusal?: string; outcome?: string }) {
  const { item } = props;
  const mode = item.approval_mode ?? 'solo';
  const violation = item.policy_result?.violations?.[0];
  const approvals = item.approvals;
  const required = item.approvals_required;
  const pending = item.status === 'pending_review';
  const destructive = mode === 'solo' && isDestructive({ action: item.action, params: item.params ?? {} });
  const decidableAt = new Date(Date.parse(item.submitted_at) + SOLO_DELAY_MS).toISOString();
  const id = item.approval_id;
  return (
    <article class="card" id={`card-${id}`} aria-labelledby={`title-${id}`}>
      <header>
        <h2 id={`title-${id}`}>
          <code>{item.action}</code>
        </h2>
        <span class={`badge ${item.status}`}>{item.status.replace('_', ' ')}</span>
        <span class="risk">risk {item.risk_score ?? '—'}</span>
      </header>
      <dl class="facts">
        {item.tenant_id ? (
          <>
            <dt>Account</dt>
            <dd class="mono">{item.tenant_id}</dd>
          </>
        ) : null}
        <dt>Agent</dt>
        <dd>{item.agent_id ?? '—'}</dd>
        <dt>Submitted</dt>
        <dd>
          <time datetime={item.submitted_at}>{item.submitted_at.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}</time>
        </dd>
        <dt>Rule</dt>
        <dd>{violation ? `${violation.policy} #${violation.rule_index + 1}: ${violation.reason}` : (item.policy_result?.triggered_policy ?? '—')}</dd>
        {violation ? (
          <>
            <dt>Matched</dt>
            <dd>
              <mark class="mono">{violation.match}</mark> in <code>{violation.field}</code>
            </dd>
          </>
        ) : null}
        <dt>Mode</dt>
        <dd>
          {mode} · {approvals} of {required} approval{required === 1 ? '' : 's'}
        </dd>
        <dt>Who decides</dt>
        <dd>{WHO_DECIDES[mode]}</dd>
        {item.decided_at && item.reason ? (
          <>
            <dt>Reason</dt>
            <dd>{item.reason}</dd>
          </>
        ) : null}
      </dl>
      {item.params ? (
        <details>
          <summary>Params</summary>
          <pre>{JSON.stringify(item.params, null, 2)}</pre>
        </details>
      ) : (
        <p class="hint">Params and the matching rule need a key that may read actions (actions:read).</p>
      )}
      {props.refusal ? <Notice kind="bad">Refused: {props.refusal}</Notice> : null}
      {props.outcome ? <Notice kind="ok">{props.outcome}</Notice> : null}
      {pending ? (
        <form
          class="decide"
          method="post"
          action={`/console/approvals/${id}/decision`}
          hx-post={`/console/approvals/${id}/decision`}
          hx-target={`#card-${id}`}
          hx-swap="outerHTML"
        >
          <CsrfField token={props.csrfToken} />
          {mode === 'solo' ? (
            <p class="hint" data-decidable-at={decidableAt}>
              Solo mode: decided 5 seconds after submission at the earliest (from {decidableAt.slice(11, 19)} UTC)
            </p>
          ) : null}
          <div class="row">
            <div>
              <label for={`reason-${id}`}>Reason</label>
              <input type="text" id={`reason-${id}`} name="reason" maxlength={1000} />
            </div>
            {destructive ? (
              <div>
                <label for={`confirm-${id}`}>
                  Type {CONFIRMATION_PHRASE} to approve <span class="hint">(destructive action)</span>
                </label>
                <input type="text" id={`confirm-${id}`} name="confirmation" autocomplete="off" />
              </div>
            ) : null}
            <div class="actions">
              <button type="submit" name="decision" value="approve">
                Approve
              </button>
              <button type="submit" name="decision" value="deny" class="secondary">
                Deny
              </button>
            </div>
          </div>
        </form>
      ) : null}
    </article>
  );
}

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
          <ApprovalCard item={item} csrfToken={props.viewer.csrfToken} refusal={props.refusals?.get(item.approval_id)} />
        ))}
      </div>
      {props.items.length === 0 ? <p class="empty">Nothing here.</p> : null}
    </Layout>
  );
}
