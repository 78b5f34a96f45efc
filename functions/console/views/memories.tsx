/** @jsxImportSource hono/jsx */
import type { get } from '../../memories/service';
import type { search } from '../../memories/search';
import type { lifecycle } from '../../replay/lifecycle';
import { CsrfField, Layout, Notice, type Viewer } from './layout';

type Found = Awaited<ReturnType<typeof search>>;
type Memory = Awaited<ReturnType<typeof get>>;
type History = Awaited<ReturnType<typeof lifecycle>>;

const MODES = ['semantic', 'keyword', 'hybrid'] as const;
const when = (iso: string | null) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '—');
const bare = (urn: string) => urn.replace(/^urn:uuid:/, '');

/** Search the memories in each mode (`GET /v1/memories/search`); each result links to its page. */
export function MemoriesPage(props: { viewer: Viewer; q: string; mode: string; found?: Found; problem?: string; notice?: string }) {
  return (
    <Layout title="Memories" current="/console/memories" viewer={props.viewer}>
      <h1>Memories</h1>
      <p class="lead">Find what your agents remember: by meaning (semantic), by words (keyword), or both (hybrid).</p>
      {props.notice ? <Notice kind="ok">{props.notice}</Notice> : null}
      <form class="panel" method="get" action="/console/memories">
        <div class="row">
          <div>
            <label for="q">Search</label>
            <input type="search" id="q" name="q" value={props.q} required />
          </div>
          <div>
            <label for="mode">Mode</label>
            <select id="mode" name="mode">
              {MODES.map((m) => (
                <option value={m} selected={m === props.mode}>
                  {m}
                </option>
              ))}
            </select>
          </div>
          <div class="actions">
            <button type="submit">Search</button>
          </div>
        </div>
      </form>
      {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
      {props.found ? (
        props.found.memories.length ? (
          props.found.memories.map((m) => (
            <article class="card">
              <p>
                <a href={`/console/memories/${bare(m.uuid)}`}>{m.observation}</a>
              </p>
              <p class="hint">
                score {m.score} · similarity {m.similarity}
                {m.tags?.length ? ` · ${m.tags.join(', ')}` : ''}
              </p>
            </article>
          ))
        ) : (
          <p class="empty">No memory matches.</p>
        )
      ) : null}
    </Layout>
  );
}

/** One memory (`GET /v1/memories/{id}`), and the form that forgets it (`DELETE /v1/memories/{id}`). */
export function MemoryPage(props: { viewer: Viewer; memory: Memory; history: History | null }) {
  const m = props.memory;
  return (
    <Layout title="Memory" current="/console/memories" viewer={props.viewer}>
      <p>
        <a href="/console/memories">← Search</a>
      </p>
      <h1>Memory</h1>
      <blockquote class="panel">{m.observation}</blockquote>
      <dl class="facts panel">
        <dt>Id</dt>
        <dd class="mono">{m.uuid}</dd>
        <dt>Tags</dt>
        <dd>{m.tags.join(', ') || '—'}</dd>
        <dt>Importance</dt>
        <dd>{m.importance}</dd>
        <dt>Agent</dt>
        <dd class="mono">{m.agent_id ?? '—'}</dd>
        <dt>Created</dt>
        <dd>{when(m.created_at)}</dd>
        <dt>Updated</dt>
        <dd>{when(m.updated_at)}</dd>
        <dt>Superseded by</dt>
        <dd class="mono">{m.superseded_by ?? '—'}</dd>
        <dt>Content hash</dt>
        <dd class="mono">{m.hash}</dd>
      </dl>
      {props.history ? <MemoryHistory history={props.history} /> : <p class="hint">Versions and links come with replay (Pro and Enterprise).</p>}
      <form method="post" action={`/console/memories/${bare(m.uuid)}/forget`} class="panel">
        <CsrfField token={props.viewer.csrfToken} />
        <p class="hint">Forgetting deletes the memory; the audit trail keeps the deletion, and a rollback can bring it back.</p>
        <button type="submit" class="danger">
          Forget this memory
        </button>
      </form>
    </Layout>
  );
}

/** The versions the memory went through, newest first, its links and the entities it mentions. */
function MemoryHistory(props: { history: History }) {
  const h = props.history;
  return (
    <>
      <h2 id="versions-title">Versions</h2>
      <div class="table-wrap">
        <table aria-labelledby="versions-title">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">When</th>
              <th scope="col">Importance</th>
              <th scope="col">Observation</th>
            </tr>
          </thead>
          <tbody>
            {[...h.versions].reverse().map((v) => (
              <tr>
                <td>{v.version}</td>
                <td class="when">{when(v.timestamp)}</td>
                <td>{v.importance}</td>
                <td>{v.observation}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="hint">
        {h.current_state} · recalled {h.recall_count} time{h.recall_count === 1 ? '' : 's'}
        {h.last_recalled_at ? `, last at ${when(h.last_recalled_at)}` : ''}
      </p>
      <h2 id="links-title">Links</h2>
      {h.links.length ? (
        <div class="table-wrap">
          <table aria-labelledby="links-title">
            <thead>
              <tr>
                <th scope="col">Relation</th>
                <th scope="col">From</th>
                <th scope="col">To</th>
                <th scope="col">Weight</th>
                <th scope="col">Since</th>
              </tr>
            </thead>
            <tbody>
              {h.links.map((l) => (
                <tr>
                  <td>{l.relation}</td>
                  <td class="mono">{linkTo(l.source_id)}</td>
                  <td class="mono">{linkTo(l.target_id)}</td>
                  <td>{l.weight}</td>
                  <td class="when">{when(l.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No links.</p>
      )}
      {h.entities.length ? (
        <>
          <h2>Mentions</h2>
          <ul>
            {h.entities.map((e) => (
              <li>
                {e.name} <span class="hint">({e.entity_type})</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </>
  );
}

/** A memory id as a link to its page; anything else (an entity) as text. */
const linkTo = (id: string) => (/^urn:uuid:/.test(id) ? <a href={`/console/memories/${bare(id)}`}>{bare(id)}</a> : id);
