/** @jsxImportSource hono/jsx */
import type { listPolicies, testPolicies } from '../../policies/service';
import { CsrfField, Layout, Notice, type Viewer } from './layout';

type Listed = Awaited<ReturnType<typeof listPolicies>>;
type Tested = Awaited<ReturnType<typeof testPolicies>>;
export interface DryRunForm {
  action: string;
  params: string;
  agent_id: string;
}

const OUTCOME: Record<string, { kind: 'ok' | 'bad' | 'warn'; text: string }> = {
  allowed: { kind: 'ok', text: 'Allowed: no policy would stop it.' },
  pending_review: { kind: 'warn', text: 'Held for review: a person would have to approve it.' },
  blocked: { kind: 'bad', text: 'Blocked: it would be refused.' },
};

/** The policies in force and a dry run: what they would decide for an action, without recording it. */
export function PoliciesPage(props: { viewer: Viewer; listed: Listed; form: DryRunForm; tested?: Tested; problem?: string }) {
  const { listed, form, tested } = props;
  return (
    <Layout title="Policies" current="/console/policies" viewer={props.viewer}>
      <h1>Policies</h1>
      <p class="lead">
        The rules every action is checked against. Evaluation mode <strong>{listed.mode}</strong>, approval mode <strong>{listed.approval_mode}</strong>.
      </p>
      <section class="panel" aria-labelledby="dry-run-title">
        <h2 id="dry-run-title">Dry run</h2>
        <p class="hint">What the policies would decide for an action. Nothing is stored, audited or counted.</p>
        <form method="post" action="/console/policies/dry-run" class="decide">
          <CsrfField token={props.viewer.csrfToken} />
          <div class="row">
            <div>
              <label for="action">
                Action <span class="hint">(connector.operation, such as db.query)</span>
              </label>
              <input type="text" id="action" name="action" required maxlength={200} value={form.action} />
            </div>
            <div>
              <label for="agent_id">
                Agent <span class="hint">(optional: its own policies apply too)</span>
              </label>
              <input type="text" id="agent_id" name="agent_id" maxlength={128} value={form.agent_id} />
            </div>
          </div>
          <div>
            <label for="params">
              Params <span class="hint">(a JSON object)</span>
            </label>
            <textarea id="params" name="params" rows={6} class="mono">
              {form.params}
            </textarea>
          </div>
          <div class="actions">
            <button type="submit">Run</button>
          </div>
        </form>
        {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
        {tested ? (
          <div id="dry-run-result">
            <Notice kind={OUTCOME[tested.status].kind}>{OUTCOME[tested.status].text}</Notice>
            <dl class="facts">
              <dt>Decision</dt>
              <dd>
                <span class={`badge ${tested.status}`}>{tested.status.replace('_', ' ')}</span>
              </dd>
              <dt>Risk</dt>
              <dd>{tested.policy_result.risk_score.toFixed(2)}</dd>
              <dt>Triggered</dt>
              <dd>{tested.policy_result.triggered_policy ? `${tested.policy_result.triggered_policy}: ${tested.policy_result.reason ?? ''}` : '—'}</dd>
              <dt>Evaluated</dt>
              <dd>{tested.policy_result.policies_evaluated.join(', ')}</dd>
              {tested.budget_exceeded ? (
                <>
                  <dt>Budget</dt>
                  <dd>{tested.budget_exceeded} ran out</dd>
                </>
              ) : null}
            </dl>
            {tested.matches.length ? (
              <ul>
                {tested.matches.map((m) => (
                  <li>
                    {m.policy} #{m.rule_index + 1} ({m.severity}, {m.on_violation}): <mark class="mono">{m.match}</mark> in <code>{m.field}</code>
                  </li>
                ))}
              </ul>
            ) : null}
          </div>
        ) : null}
      </section>
      <h2>In force</h2>
      <div class="table-wrap">
        <table>
          <caption class="skip">Policies</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Source</th>
              <th scope="col">Enabled</th>
              <th scope="col">Scope</th>
              <th scope="col">Rules</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {listed.policies.map((p) => (
              <tr>
                <td>
                  <code>{p.name}</code>
                </td>
                <td>{p.source}</td>
                <td>{p.enabled ? 'yes' : 'no'}</td>
                <td>{p.agent_id ? `agent ${p.agent_id}` : 'account'}</td>
                <td>{'rule_count' in p && p.rule_count !== undefined ? p.rule_count : '—'}</td>
                <td>{p.description ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Layout>
  );
}
