/** @jsxImportSource hono/jsx */
import type { getWebhook, listDeliveries, listWebhooks } from '../../webhooks/service';
import { CsrfField, Layout, Notice, type Viewer } from './layout';

type Listed = Awaited<ReturnType<typeof listWebhooks>>;
type Hook = Awaited<ReturnType<typeof getWebhook>>;
type Deliveries = Awaited<ReturnType<typeof listDeliveries>>;

const when = (iso: string | null) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '—');
const stateOf = (h: Hook) => (h.active ? (h.failing_since ? 'failing' : 'active') : 'inactive');
const STATE_CLASS: Record<string, string> = { active: 'ok', failing: 'pending_review', inactive: 'bad' };

/** The account's webhook endpoints; each opens on its deliveries. */
export function WebhooksPage(props: { viewer: Viewer; listed: Listed }) {
  const hooks = props.listed.webhooks;
  return (
    <Layout title="Webhooks" current="/console/webhooks" viewer={props.viewer}>
      <h1>Webhooks</h1>
      <p class="lead">Where events are sent, and how each delivery went. Endpoints are registered with the API (POST /v1/webhooks).</p>
      {hooks.length ? (
        <div class="table-wrap">
          <table>
            <caption class="skip">Webhook endpoints</caption>
            <thead>
              <tr>
                <th scope="col">Endpoint</th>
                <th scope="col">State</th>
                <th scope="col">Events</th>
                <th scope="col">Format</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {hooks.map((h) => (
                <tr>
                  <td>
                    <a href={`/console/webhooks/${h.webhook_id}`}>{h.description ?? h.url}</a>
                    {h.description ? <div class="hint mono">{h.url}</div> : null}
                  </td>
                  <td>
                    <span class={`badge ${STATE_CLASS[stateOf(h)]}`}>{stateOf(h)}</span>
                  </td>
                  <td>{h.events.join(', ')}</td>
                  <td>{h.format}</td>
                  <td class="when">{when(h.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No webhooks yet.</p>
      )}
    </Layout>
  );
}

/** One endpoint: its settings, a test ping, and its deliveries with a way to send each again. */
export function WebhookPage(props: { viewer: Viewer; hook: Hook; deliveries: Deliveries; notice?: string; problem?: string }) {
  const h = props.hook;
  const token = props.viewer.csrfToken;
  return (
    <Layout title="Webhook" current="/console/webhooks" viewer={props.viewer}>
      <p>
        <a href="/console/webhooks">← All webhooks</a>
      </p>
      <h1>{h.description ?? 'Webhook'}</h1>
      <dl class="facts panel">
        <dt>URL</dt>
        <dd class="mono">{h.url}</dd>
        <dt>Id</dt>
        <dd class="mono">{h.webhook_id}</dd>
        <dt>State</dt>
        <dd>
          <span class={`badge ${STATE_CLASS[stateOf(h)]}`}>{stateOf(h)}</span>
          {h.failing_since ? ` since ${when(h.failing_since)}` : ''}
        </dd>
        <dt>Events</dt>
        <dd>{h.events.join(', ')}</dd>
        <dt>Format</dt>
        <dd>{h.format}</dd>
      </dl>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
      <form method="post" action={`/console/webhooks/${h.webhook_id}/test`} class="panel">
        <CsrfField token={token} />
        <p class="hint">Sends a signed webhook.test event to this endpoint only.</p>
        <button type="submit">Send a test ping</button>
      </form>
      <h2 id="deliveries-title">Deliveries</h2>
      <p class="hint">
        {props.deliveries.total_count} deliver{props.deliveries.total_count === 1 ? 'y' : 'ies'}
        {props.deliveries.total_count > props.deliveries.deliveries.length ? `, the newest ${props.deliveries.deliveries.length} shown` : ''}
      </p>
      {props.deliveries.deliveries.length ? (
        <div class="table-wrap">
          <table aria-labelledby="deliveries-title">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempt</th>
                <th scope="col">Response</th>
                <th scope="col">Took</th>
                <th scope="col">
                  <span class="skip">Send again</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.deliveries.deliveries.map((d) => (
                <tr>
                  <td class="when">{when(d.created_at)}</td>
                  <td>
                    <code>{d.event_type}</code>
                  </td>
                  <td>
                    <span class={`badge ${d.success ? 'ok' : 'bad'}`}>{d.success ? 'delivered' : 'failed'}</span>
                    {d.error ? <div class="hint">{d.error}</div> : null}
                  </td>
                  <td>{d.attempt}</td>
                  <td>{d.status_code || 'none'}</td>
                  <td>{d.duration_ms} ms</td>
                  <td>
                    <form method="post" action={`/console/webhooks/${h.webhook_id}/deliveries/${d.delivery_id}/redeliver`}>
                      <CsrfField token={token} />
                      <button type="submit" class="secondary">
                        Redeliver
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No deliveries yet.</p>
      )}
    </Layout>
  );
}
