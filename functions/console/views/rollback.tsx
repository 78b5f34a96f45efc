/** @jsxImportSource hono/jsx */
import type { history, preview, rollback } from '../../rollback/service';
import { CsrfField, Layout, Notice, type Viewer } from './layout';

type Previewed = Awaited<ReturnType<typeof preview>>;
type RolledBack = Awaited<ReturnType<typeof rollback>>;
type History = Awaited<ReturnType<typeof history>>;

const when = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

/**
 * Rollback in three steps: pick a time, see what a rollback to it would do, confirm with the typed
 * phrase; then the result. Recent rollbacks below.
 */
export function RollbackPage(props: { viewer: Viewer; target?: string; previewed?: Previewed; done?: RolledBack; problem?: string; recent: History }) {
  const { previewed, done } = props;
  return (
    <Layout title="Rollback" current="/console/rollback" viewer={props.viewer}>
      <h1>Rollback</h1>
      <p class="lead">Put the memory store back as it was at a moment: memories created after it are removed, changed ones restored.</p>
      <form class="panel" method="get" action="/console/rollback/preview">
        <div class="row">
          <div>
            <label for="target">
              Roll back to <span class="hint">(a time such as 2026-11-28T09:30:00Z, or “2 hours ago”)</span>
            </label>
            <input type="text" id="target" name="target" required value={props.target ?? ''} />
          </div>
          <div class="actions">
            <button type="submit">Preview</button>
          </div>
        </div>
      </form>
      {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
      {previewed && !done ? (
        <section class="panel" aria-labelledby="preview-title">
          <h2 id="preview-title">What a rollback to {when(previewed.target_timestamp)} would do</h2>
          <dl class="facts">
            <dt>Removed</dt>
            <dd>{previewed.artifacts_deleted} memories created after it</dd>
            <dt>Restored</dt>
            <dd>{previewed.artifacts_restored} memories deleted after it</dd>
            <dt>Reverted</dt>
            <dd>{previewed.memories_reverted} memories changed after it</dd>
            <dt>Size</dt>
            <dd>{previewed.size_bytes} bytes of observations</dd>
          </dl>
          {previewed.warnings.map((w) => (
            <Notice kind="warn">{w}</Notice>
          ))}
          <form method="post" action="/console/rollback" class="decide">
            <CsrfField token={props.viewer.csrfToken} />
            <input type="hidden" name="target" value={previewed.target_timestamp} />
            <div class="row">
              <div>
                <label for="confirmation">Type ROLLBACK to confirm</label>
                <input type="text" id="confirmation" name="confirmation" autocomplete="off" required />
              </div>
              <div class="actions">
                <button type="submit" class="danger">
                  Roll back
                </button>
              </div>
            </div>
          </form>
        </section>
      ) : null}
      {done ? <Notice kind="ok">{done.message}</Notice> : null}
      <h2>Recent rollbacks</h2>
      {props.recent.rollbacks.length ? (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Performed</th>
                <th scope="col">Back to</th>
                <th scope="col">Removed</th>
                <th scope="col">Restored</th>
                <th scope="col">Reverted</th>
              </tr>
            </thead>
            <tbody>
              {props.recent.rollbacks.map((r) => (
                <tr>
                  <td class="when">{when(r.performed_at)}</td>
                  <td class="when">{when(r.target)}</td>
                  <td>{r.operations_undone}</td>
                  <td>{r.artifacts_restored}</td>
                  <td>{r.memories_reverted}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No rollbacks yet.</p>
      )}
    </Layout>
  );
}
