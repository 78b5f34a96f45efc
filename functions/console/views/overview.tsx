/** @jsxImportSource hono/jsx */
import type { health } from '../../system/service';
import type { milestones, usageReport } from '../../usage/service';
import { Layout, type Viewer } from './layout';

type Usage = Awaited<ReturnType<typeof usageReport>>;
type Milestones = Awaited<ReturnType<typeof milestones>>;
type Health = Awaited<ReturnType<typeof health>>;

const QUOTAS = [
  ['api_calls', 'API calls this month'],
  ['memories', 'Memories'],
  ['rollbacks', 'Rollbacks this month'],
] as const;

/** The account at a glance: quotas (`GET /v1/usage`), milestones, and the service's health. */
export function OverviewPage(props: { viewer: Viewer; usage: Usage; milestones: Milestones; health: Health }) {
  const { usage, health } = props;
  return (
    <Layout title="Overview" current="/console/overview" viewer={props.viewer}>
      <h1>Overview</h1>
      <p class="lead">
        The {usage.tier} tier; the period resets {usage.resets_at.slice(0, 10)}. Usage pressure: {usage.usage_pressure_level}.
      </p>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Quota</th>
              <th scope="col">Used</th>
              <th scope="col">Limit</th>
              <th scope="col">Share</th>
            </tr>
          </thead>
          <tbody>
            {QUOTAS.map(([name, label]) => (
              <tr>
                <td>{label}</td>
                <td>{usage[name].current.toLocaleString('en')}</td>
                <td>{usage[name].limit?.toLocaleString('en') ?? 'unlimited'}</td>
                <td>{usage.quota_percent[name]} %</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <section class="panel" aria-labelledby="health-title">
        <h2 id="health-title">
          Service health <span class={`badge ${health.status === 'healthy' ? 'ok' : 'bad'}`}>{health.status}</span>
        </h2>
        <p class="hint">
          Version {health.version}, checked {health.timestamp.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}.
        </p>
      </section>
      <section class="panel" aria-labelledby="milestones-title">
        <h2 id="milestones-title">Milestones</h2>
        {props.milestones.milestones.length ? (
          <ul>
            {props.milestones.milestones.map((m) => (
              <li>
                {m.milestone.replaceAll('_', ' ')} <span class="hint">{m.achieved_at.slice(0, 10)}</span>
              </li>
            ))}
          </ul>
        ) : (
          <p class="hint">None yet.</p>
        )}
      </section>
    </Layout>
  );
}
