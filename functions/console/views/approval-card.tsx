/** @jsxImportSource hono/jsx */
import { CONFIRMATION_PHRASE, destructiveWord, SOLO_DELAY_MS } from '../../../shared/control/decide';
import type { Card } from '../cards';
import { paramsView, type Segment, textView, type Violation } from '../params-view';
import { CsrfField, Notice } from './layout';

const WHO_DECIDES: Record<string, string> = {
  solo: 'You (this account)',
  team: 'Any member of a team this account belongs to (owner, admin or member), with their own key; you may approve your own action 10 minutes after submission',
  enterprise: 'This account and its team members (not readonly)',
};

const TRUST: Record<string, string> = {
  verified: 'written by a person or a key the account trusts',
  agent: 'written by one of your agents',
  external: 'from outside the account (a tool result, a web page, a message)',
};

/**
 * What a held memory's card shows beyond an action's (`kind: "memory"` entries of GET /v1/approvals):
 * read field by field, so a card renders whatever of them the entry carries.
 */
function heldMemory(item: Card) {
  const entry = item as Record<string, unknown>;
  if (entry.kind !== 'memory') return null;
  const source = entry.source && typeof entry.source === 'object' ? (entry.source as Record<string, unknown>) : null;
  const text = (v: unknown) => (typeof v === 'string' && v ? v : null);
  return {
    observation: text(entry.observation),
    trust: text(entry.trust),
    source: source
      ? { kind: text(source.kind), via: text(source.via), key_id: text(source.key_id), agent_id: text(source.agent_id), ref: text(source.ref) }
      : null,
  };
}

/** Text with each rule's match marked (the title names the rule), escaped as any other text. */
const Marked = (props: { segments: Segment[]; violations: readonly Violation[] }) => (
  <>
    {props.segments.map((s) => {
      if (s.hit === undefined) return s.text;
      const v = props.violations[s.hit];
      return <mark title={`${v.policy} #${v.rule_index + 1}: ${v.reason}`}>{s.text}</mark>;
    })}
  </>
);

const shownTime = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

/** The params of a held action, open when short, what each rule matched marked in them. */
function ActionParams(props: { item: Card; violations: Violation[] }) {
  const { item } = props;
  if (!item.params) return <p class="hint">Params and the matching rule need a key that may read actions (actions:read).</p>;
  const view = paramsView(item.action, item.params, props.violations);
  return (
    <details class="params" open={view.short}>
      <summary>
        What it will do: <code>{item.action}</code> with {view.short ? 'these params' : `these params (${view.text.split('\n').length} lines)`}
      </summary>
      <pre>
        <Marked segments={view.segments} violations={props.violations} />
      </pre>
    </details>
  );
}

/** A held memory: its text (the match marked), where it came from and how far it is trusted. */
function MemoryBody(props: { memory: NonNullable<ReturnType<typeof heldMemory>>; violations: Violation[] }) {
  const { memory, violations } = props;
  const src = memory.source;
  return (
    <>
      {memory.observation ? (
        <blockquote class="held-text">
          <Marked
            segments={textView(
              memory.observation,
              violations.map((v) => v.match),
            )}
            violations={violations}
          />
        </blockquote>
      ) : null}
      <dl class="facts">
        {src ? (
          <>
            <dt>Source</dt>
            <dd>
              {[src.kind, src.via ? `via ${src.via}` : null].filter(Boolean).join(' ') || '—'}
              {src.agent_id ? (
                <>
                  {' · agent '}
                  <span class="mono">{src.agent_id}</span>
                </>
              ) : null}
              {src.key_id ? (
                <>
                  {' · key '}
                  <span class="mono">{src.key_id}</span>
                </>
              ) : null}
              {src.ref ? (
                <>
                  {' · '}
                  <span class="mono">{src.ref}</span>
                </>
              ) : null}
            </dd>
          </>
        ) : null}
        {memory.trust ? (
          <>
            <dt>Trust</dt>
            <dd>
              <span class={`badge trust-${memory.trust}`}>{memory.trust}</span> <span class="hint">{TRUST[memory.trust] ?? ''}</span>
            </dd>
          </>
        ) : null}
      </dl>
    </>
  );
}

/** The confirmation a destructive solo approval needs, its label naming what it confirms and why. */
function Confirmation(props: { id: string; action: string; params: unknown }) {
  const why = destructiveWord({ action: props.action, params: props.params ?? {} });
  if (!why) return null;
  return (
    <div>
      <label for={`confirm-${props.id}`}>
        Type {CONFIRMATION_PHRASE} to confirm approving <code>{props.action}</code>{' '}
        <span class="hint">
          (destructive: “{why.word}” in its {why.in === 'name' ? 'name' : 'params'})
        </span>
      </label>
      <input type="text" id={`confirm-${props.id}`} name="confirmation" autocomplete="off" />
    </div>
  );
}

/**
 * One held action (or memory) waiting for (or past) a decision: what will happen, why it was held,
 * by whom it is decided, and the decision form. An entry without `kind` is an action.
 */
/**
 * The element id part of an approval: a held memory's approval id is a URN (`urn:uuid:…`), whose
 * colons a CSS selector (htmx's `hx-target`, the stream's out-of-band swaps) would read as pseudo-classes.
 */
export const cardKey = (approvalId: string) => approvalId.replace(/[^A-Za-z0-9_-]/g, '-');

export function ApprovalCard(props: { item: Card; csrfToken: string; refusal?: string; outcome?: string; tab?: string }) {
  const { item } = props;
  const memory = heldMemory(item);
  const mode = item.approval_mode ?? 'solo';
  const violations: Violation[] = item.policy_result?.violations ?? [];
  const violation = violations[0];
  const approvals = item.approvals;
  const required = item.approvals_required;
  const pending = item.status === 'pending_review';
  const decidableAt = new Date(Date.parse(item.submitted_at) + SOLO_DELAY_MS).toISOString();
  const id = item.approval_id;
  const key = cardKey(id);
  return (
    <article class="card" id={`card-${key}`} aria-labelledby={`title-${key}`}>
      <header>
        <h2 id={`title-${key}`}>{memory ? 'Memory to store' : <code>{item.action}</code>}</h2>
        <span class={`badge ${item.status}`}>{item.status.replace('_', ' ')}</span>
        <span class="risk">risk {item.risk_score ?? '—'}</span>
      </header>
      {memory ? <MemoryBody memory={memory} violations={violations} /> : <ActionParams item={item} violations={violations} />}
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
          <time datetime={item.submitted_at}>{shownTime(item.submitted_at)}</time>
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
      {props.refusal ? <Notice kind="bad">Refused: {props.refusal}</Notice> : null}
      {props.outcome ? <Notice kind="ok">{props.outcome}</Notice> : null}
      {pending ? (
        <form
          class="decide"
          method="post"
          action={`/console/approvals/${id}/decision`}
          hx-post={`/console/approvals/${id}/decision`}
          hx-target={`#card-${key}`}
          hx-swap="outerHTML"
        >
          <CsrfField token={props.csrfToken} />
          {props.tab ? <input type="hidden" name="tab" value={props.tab} /> : null}
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
            {mode === 'solo' && !memory ? <Confirmation id={id} action={item.action} params={item.params} /> : null}
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
 * What takes a card's place once a decision closed it: the card leaves the pending tab, and this
 * line says what was decided, a denial as a denial. `action` null: a held memory. The live stream
 * sends it (`oob`) into the card of a decision taken elsewhere, keeping the card's element, so
 * that a decision this page posted meanwhile still swaps its answer in where the card was.
 */
export function DecidedNotice(props: { approvalId: string; action: string | null; denied: boolean; by?: string | null; expired?: boolean; oob?: boolean }) {
  const { approvalId, action, denied } = props;
  const what = action === null ? 'the memory' : <code>{action}</code>;
  const then = denied ? (action === null ? 'it is not stored.' : 'it will not run.') : action === null ? 'it is stored.' : 'the agent may run it now.';
  const notice = (
    <div id={props.oob ? undefined : `decided-${cardKey(approvalId)}`} class="decided">
      <Notice kind={denied ? 'denied' : 'ok'}>
        {denied ? 'Denied' : 'Approved'} {what}
        {props.expired ? ' (nobody decided in time)' : props.by ? ` by ${props.by}` : ''}: {then}{' '}
        {action === null ? null : <a href={`/console/actions/${approvalId}`}>Why it was held</a>}
      </Notice>
    </div>
  );
  return props.oob ? (
    <div id={`card-${cardKey(approvalId)}`} hx-swap-oob="innerHTML">
      {notice}
    </div>
  ) : (
    notice
  );
}
