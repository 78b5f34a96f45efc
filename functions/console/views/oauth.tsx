/** @jsxImportSource hono/jsx */
import type { listGrants } from '../../oauth/service';
import { CsrfField, Layout, Notice, type Viewer } from './layout';

type Grants = Awaited<ReturnType<typeof listGrants>>;

const when = (d: Date | null) =>
  d
    ? d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC')
    : '—';

export const EXPIRY_CHOICES = [
  { value: '1', label: '1 day' },
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: 'never', label: 'Until I revoke it' },
] as const;

/**
 * The consent page: which app asks, where it sends the answer, and what it may do. Every field of
 * the authorization request rides along hidden, and the POST checks all of it again.
 */
export function ConsentPage(props: {
  viewer: Viewer;
  clientName: string;
  clientId: string;
  redirectHost: string;
  hidden: Record<string, string>;
  families: string[];
  problem?: string;
}) {
  return (
    <Layout title="Connect an app" viewer={props.viewer}>
      <section class="panel">
        <h1>Connect {props.clientName}</h1>
        <p class="lead">
          <strong>{props.clientName}</strong> wants to use engram's MCP tools as your account. If you approve, your browser goes back to{' '}
          <strong class="mono">{props.redirectHost}</strong>.
        </p>
        <p class="hint mono">client_id: {props.clientId}</p>
        {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
        <form method="post" action="/console/oauth/authorize">
          <CsrfField token={props.viewer.csrfToken} />
          {Object.entries(props.hidden).map(([name, value]) => (
            <input type="hidden" name={name} value={value} />
          ))}
          <fieldset>
            <legend>What it may do</legend>
            <div>
              <input type="checkbox" id="all_scopes" name="all_scopes" value="1" />
              <label for="all_scopes">Everything this account can do (*)</label>
            </div>
            <table>
              <caption class="skip">Scopes by family</caption>
              <tbody>
                {props.families.map((family) => (
                  <tr>
                    <th scope="row">
                      <label for={`scope_${family}`}>{family}</label>
                    </th>
                    <td>
                      <select id={`scope_${family}`} name={`scope_${family}`}>
                        <option value="">none</option>
                        <option value="read" selected={family === 'memories'}>
                          read
                        </option>
                        <option value="write">read and write</option>
                      </select>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </fieldset>
          <div>
            <label for="agent_id">Only as this agent (optional)</label>
            <input type="text" id="agent_id" name="agent_id" maxlength={100} autocomplete="off" />
          </div>
          <div>
            <label for="space_ids">Only these spaces (optional, comma-separated ids)</label>
            <input type="text" id="space_ids" name="space_ids" autocomplete="off" />
          </div>
          <div>
            <label for="expires">Access ends after</label>
            <select id="expires" name="expires">
              {EXPIRY_CHOICES.map((c) => (
                <option value={c.value} selected={c.value === '30'}>
                  {c.label}
                </option>
              ))}
            </select>
          </div>
          <div class="actions">
            <button type="submit" name="decision" value="approve">
              Approve
            </button>
            <button type="submit" name="decision" value="deny" class="secondary">
              Deny
            </button>
          </div>
        </form>
      </section>
    </Layout>
  );
}

/** Apps connected by OAuth: each grant is a restricted key of the account; revoking it ends its tokens at once. */
export function ConnectedAppsPage(props: { viewer: Viewer; grants: Grants; notice?: string; problem?: string }) {
  const live = props.grants.filter((g) => g.active);
  return (
    <Layout title="Connected apps" current="/console/connected-apps" viewer={props.viewer}>
      <h1>Connected apps</h1>
      <p class="lead">MCP clients you signed in with OAuth. Each is a restricted key of your account; revoking it stops its tokens at once.</p>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
      {live.length ? (
        <div class="table-wrap">
          <table>
            <caption class="skip">Connected apps</caption>
            <thead>
              <tr>
                <th scope="col">App</th>
                <th scope="col">May do</th>
                <th scope="col">Connected</th>
                <th scope="col">Last used</th>
                <th scope="col">Ends</th>
                <th scope="col">
                  <span class="skip">Revoke</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {live.map((g) => (
                <tr>
                  <td>
                    {g.clientName}
                    <div class="hint mono">{g.redirectHost}</div>
                  </td>
                  <td class="mono">
                    {g.scopes.join(' ')}
                    {g.agentId ? <div class="hint">agent {g.agentId}</div> : null}
                    {g.spaceIds ? <div class="hint">spaces {g.spaceIds.join(', ')}</div> : null}
                  </td>
                  <td class="when">{when(g.createdAt)}</td>
                  <td class="when">{when(g.lastUsedAt)}</td>
                  <td class="when">{when(g.expiresAt)}</td>
                  <td>
                    <form method="post" action="/console/connected-apps/revoke">
                      <CsrfField token={props.viewer.csrfToken} />
                      <input type="hidden" name="grant_id" value={g.id} />
                      <button type="submit" class="secondary">
                        Revoke
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No connected apps.</p>
      )}
    </Layout>
  );
}
