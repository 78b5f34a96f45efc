/** @jsxImportSource hono/jsx */
import type { explain } from '../../actions/insights';
import { MAX_RECALLED_MEMORIES, RECALL_WINDOW_MINUTES } from '../../actions/schemas';
import type { statusDto } from '../../actions/service';
import { Layout, type Viewer } from './layout';

type Row = ReturnType<typeof statusDto> & { outcome: string };
type Explained = Awaited<ReturnType<typeof explain>>;

const when = (iso: string | null) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '—');

/** What a person decided, from the action's status and decision time (the evaluation alone decides the rest). */
export function decisionOf(row: { status: string; decided_at: string | null; outcome: string }): string {
  if (row.outcome !== 'pending_review') return '—';
  if (row.status === 'pending_review') return 'waiting';
  if (!row.decided_at) return '—';
  return row.status === 'denied' ? 'denied' : 'approved';
}

/** Every action the account's agents submitted, newest first, with what evaluation and people decided. */
export function ActionsPage(props: { viewer: Viewer; rows: Row[]; total: number; offset: number; limit: number }) {
  const { rows, total, offset, limit } = props;
  return (
    <Layout title="Actions" current="/console/actions" viewer={props.viewer}>
      <h1>Actions</h1>
      <p class="lead">What your agents asked to do, what the policies answered and what people decided. Open one to see why.</p>
      <p class="hint">
        {total} action{total === 1 ? '' : 's'}
        {rows.length ? `, ${offset + 1} to ${offset + rows.length} shown` : ''}
      </p>
      {rows.length ? (
        <div class="table-wrap">
          <table>
            <caption class="skip">Submitted actions</caption>
            <thead>
              <tr>
                <th scope="col">Action</th>
                <th scope="col">Agent</th>
                <th scope="col">Evaluation</th>
                <th scope="col">Status</th>
                <th scope="col">Decision</th>
                <th scope="col">Risk</th>
                <th scope="col">Submitted</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr>
                  <td>
                    <a href={`/console/actions/${r.action_id}`}>
                      <code>{r.action}</code>
                    </a>
                  </td>
                  <td class="mono">{r.agent_id ?? '—'}</td>
                  <td>{r.outcome.replace('_', ' ')}</td>
                  <td>
                    <span class={`badge ${r.status}`}>{r.status.replace('_', ' ')}</span>
                  </td>
                  <td>{decisionOf(r)}</td>
                  <td>{r.risk_score?.toFixed(2) ?? '—'}</td>
                  <td class="when">{when(r.submitted_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No actions yet.</p>
      )}
      <nav class="pager" aria-label="Pages">
        {offset > 0 ? <a href={`/console/actions?offset=${Math.max(0, offset - limit)}`}>← Newer</a> : <span />}
        {offset + rows.length < total ? <a href={`/console/actions?offset=${offset + limit}`}>Older →</a> : <span />}
      </nav>
    </Layout>
  );
}

/** One action, explained: the summary, the policy result, the approval and its decisions, the audit trail, the memories its key recalled before it. */
export function ActionPage(props: { viewer: Viewer; explained: Explained }) {
  const e = props.explained;
  const pr = e.policy_result;
  return (
    <Layout title="Action" current="/console/actions" viewer={props.viewer}>
      <p>
        <a href="/console/actions">← All actions</a>
      </p>
      <h1>
        <code>{e.action}</code> <span class={`badge ${e.status}`}>{e.status.replace('_', ' ')}</span>
      </h1>
      <section class="panel" aria-labelledby="explain-title">
        <h2 id="explain-title">Why it ended this way</h2>
        <p id="explain-summary">{e.summary}</p>
      </section>
      <dl class="facts panel">
        <dt>Action id</dt>
        <dd class="mono">{e.action_id}</dd>
        <dt>Agent</dt>
        <dd class="mono">{e.agent_id ?? '—'}</dd>
        <dt>Submitted</dt>
        <dd>{when(e.submitted_at)}</dd>
        <dt>Evaluated</dt>
        <dd>
          {pr.status.replace('_', ' ')} · risk {pr.risk_score.toFixed(2)} · {pr.policies_evaluated.join(', ') || 'no policies'}
        </dd>
        <dt>Triggered</dt>
        <dd>{pr.triggered_policy ? `${pr.triggered_policy}: ${pr.reason ?? ''}` : '—'}</dd>
        {pr.warnings.length ? (
          <>
            <dt>Warnings</dt>
            <dd>{pr.warnings.join('; ')}</dd>
          </>
        ) : null}
      </dl>
      {pr.violations?.length ? (
        <>
          <h2>Rules that matched</h2>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Policy</th>
                  <th scope="col">Rule</th>
                  <th scope="col">Severity</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Matched</th>
                  <th scope="col">Reason</th>
                </tr>
              </thead>
              <tbody>
                {pr.violations.map((v) => (
                  <tr>
                    <td>{v.policy}</td>
                    <td>#{v.rule_index + 1}</td>
                    <td>{v.severity}</td>
                    <td>{v.on_violation}</td>
                    <td>
                      <mark class="mono">{v.match}</mark> in <code>{v.field}</code>
                    </td>
                    <td>{v.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      ) : null}
      <details class="panel">
        <summary>Params</summary>
        <pre>{JSON.stringify(e.params, null, 2)}</pre>
      </details>
      <h2>Approval</h2>
      {e.approval ? (
        <div class="panel">
          <p>
            {e.approval.approval_mode} mode · {e.approval.decisions.filter((d) => d.decision === 'approve').length} of {e.approval.approvals_required} approval
            {e.approval.approvals_required === 1 ? '' : 's'} · decided {when(e.approval.decided_at)}
            {e.approval.reason ? ` · “${e.approval.reason}”` : ''}
          </p>
          {e.approval.status === 'pending_review' ? (
            <p>
              <a href="/console/approvals">Decide it in the approvals inbox</a>
            </p>
          ) : null}
          {e.approval.decisions.length ? (
            <ul>
              {e.approval.decisions.map((d) => (
                <li>
                  {d.decision} by {d.approver_id} ({d.approver_role ?? 'owner'}) at {when(d.created_at)}
                  {d.reason ? `: “${d.reason}”` : ''}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : (
        <p class="empty">Never held for review.</p>
      )}
      <h2>Audit trail</h2>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Time</th>
              <th scope="col">Event</th>
              <th scope="col">Actor</th>
              <th scope="col">Hash</th>
            </tr>
          </thead>
          <tbody>
            {e.audit_trail.map((a) => (
              <tr>
                <td>{a.sequence_number}</td>
                <td class="when">{when(a.timestamp)}</td>
                <td>
                  <code>{a.event}</code>
                </td>
                <td class="mono">{a.actor ?? '—'}</td>
                <td class="mono" title={a.entry_hash}>
                  {a.entry_hash.slice(0, 12)}…
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2 id="recalled-title">Memories it recalled before asking</h2>
      <p class="hint">
        What the key that submitted it recalled in the {RECALL_WINDOW_MINUTES} minutes before, each as it was then, the most recent first (at most{' '}
        {MAX_RECALLED_MEMORIES}); the store held {e.memories_at_time_total} memor{e.memories_at_time_total === 1 ? 'y' : 'ies'} at the time.
      </p>
      {e.memories_recalled.length ? (
        e.memories_recalled.map((m) => (
          <article class="card recalled">
            <p>{m.observation}</p>
            <p class="hint">
              recalled {when(m.recalled_at)}
              {m.recalls > 1 ? ` (${m.recalls} times)` : ''}
              {m.query ? ` for “${m.query}”` : ''} · importance {m.importance}
              {m.tags.length ? ` · ${m.tags.join(', ')}` : ''}
            </p>
          </article>
        ))
      ) : (
        <p class="empty">Its key recalled no memories in the {RECALL_WINDOW_MINUTES} minutes before it asked.</p>
      )}
    </Layout>
  );
}
