/** @jsxImportSource hono/jsx */
import type { list } from '../../audit/service';
import type { verify } from '../../audit/verify';
import { CsrfField, Layout, Notice, type Viewer } from './layout';

type Listed = Awaited<ReturnType<typeof list>>;
type Verified = Awaited<ReturnType<typeof verify>>;

const when = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

/** The audit trail, newest first, with filters, the chain's verification and an export link. */
export function AuditPage(props: { viewer: Viewer; listed: Listed; filters: Record<string, string>; verified?: Verified; problem?: string }) {
  const { listed, filters } = props;
  const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
  return (
    <Layout title="Audit" current="/console/audit" viewer={props.viewer}>
      <h1>Audit</h1>
      <p class="lead">Every change, in a hash chain: each entry's hash covers the one before it.</p>
      <form class="panel" method="get" action="/console/audit">
        <div class="row">
          <div>
            <label for="since">Since</label>
            <input type="text" id="since" name="since" value={filters.since ?? ''} placeholder="2026-11-28T00:00:00Z" />
          </div>
          <div>
            <label for="until">Until</label>
            <input type="text" id="until" name="until" value={filters.until ?? ''} placeholder="2026-11-28T23:59:59Z" />
          </div>
          <div>
            <label for="event_type">Memory operations</label>
            <select id="event_type" name="event_type">
              {['', 'create', 'update', 'delete', 'rollback'].map((t) => (
                <option value={t} selected={(filters.event_type ?? '') === t}>
                  {t || 'all entries'}
                </option>
              ))}
            </select>
          </div>
          <div class="actions">
            <button type="submit">Filter</button>
          </div>
        </div>
      </form>
      <div class="panel">
        <div class="row">
          <form method="post" action="/console/audit/verify" class="actions">
            <CsrfField token={props.viewer.csrfToken} />
            <button type="submit">Verify the chain</button>
          </form>
          <p class="actions">
            <a class="button secondary" href={`/console/audit/export?${query}`}>
              Export CSV
            </a>
          </p>
        </div>
        {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
        {props.verified ? (
          props.verified.valid ? (
            <Notice kind="ok">
              Chain intact: {props.verified.checked.audit_entries} entries and {props.verified.checked.memories} memories checked at{' '}
              {when(props.verified.timestamp)}.
            </Notice>
          ) : (
            <Notice kind="bad">
              Chain broken: {props.verified.failure_count} integrity failure{props.verified.failure_count === 1 ? '' : 's'}.
            </Notice>
          )
        ) : null}
      </div>
      <p class="hint">
        {listed.total} entr{listed.total === 1 ? 'y' : 'ies'}, the newest {listed.entries.length} shown
      </p>
      <div class="table-wrap">
        <table>
          <caption class="skip">Audit entries</caption>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Time</th>
              <th scope="col">Operation</th>
              <th scope="col">Resource</th>
              <th scope="col">Actor</th>
              <th scope="col">Hash</th>
            </tr>
          </thead>
          <tbody>
            {listed.entries.map((e) => (
              <tr>
                <td>{e.seq}</td>
                <td class="when">{when(e.timestamp)}</td>
                <td>
                  <code>{e.source_operation}</code>
                </td>
                <td class="mono">{e.resource_id ?? '—'}</td>
                <td class="mono">{e.actor ?? '—'}</td>
                <td class="mono" title={e.entry_hash}>
                  {e.entry_hash.slice(0, 12)}…
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Layout>
  );
}
