/** @jsxImportSource hono/jsx */
import type { diff } from '../../replay/service';
import { Layout, Notice, type Viewer } from './layout';

type Diffed = Awaited<ReturnType<typeof diff>>;
type Item = Diffed['added'][number];

const when = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
const bare = (urn: string) => urn.replace(/^urn:uuid:/, '');

const KINDS = [
  { key: 'added', label: 'Added', hint: 'there at the end, not at the start' },
  { key: 'removed', label: 'Removed', hint: 'there at the start, gone at the end' },
  { key: 'modified', label: 'Modified', hint: 'there at both, changed in between' },
] as const;

/** Pick two moments; see the memories added, removed and modified between them. */
export function ReplayPage(props: { viewer: Viewer; from: string; to: string; diffed?: Diffed; problem?: string }) {
  const d = props.diffed;
  return (
    <Layout title="Replay" current="/console/replay" viewer={props.viewer}>
      <h1>Replay</h1>
      <p class="lead">The memory store at two moments, compared: what was added, removed or changed in between.</p>
      <form class="panel" method="get" action="/console/replay">
        <div class="row">
          <div>
            <label for="from">
              From <span class="hint">(a time such as 2026-11-28T09:30:00Z, or “2 hours ago”)</span>
            </label>
            <input type="text" id="from" name="from" required value={props.from} />
          </div>
          <div>
            <label for="to">
              To <span class="hint">(after From, not in the future)</span>
            </label>
            <input type="text" id="to" name="to" required value={props.to} />
          </div>
          <div class="actions">
            <button type="submit">Compare</button>
          </div>
        </div>
      </form>
      {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
      {d ? (
        <section aria-labelledby="diff-title">
          <h2 id="diff-title">
            From {when(d.from_timestamp)} to {when(d.to_timestamp)}
          </h2>
          <p class="hint" id="diff-summary">
            {d.summary.added} added · {d.summary.removed} removed · {d.summary.modified} modified
          </p>
          {KINDS.map((k) => (
            <DiffList label={k.label} hint={k.hint} items={d[k.key]} />
          ))}
        </section>
      ) : null}
    </Layout>
  );
}

function DiffList(props: { label: string; hint: string; items: Item[] }) {
  if (!props.items.length) return null;
  return (
    <>
      <h3>
        {props.label} <span class="hint">({props.hint})</span>
      </h3>
      {props.items.map((i) => (
        <article class="card">
          <p>
            <span class={`badge ${i.change_type === 'added' ? 'ok' : i.change_type === 'removed' ? 'bad' : ''}`}>{i.change_type}</span>{' '}
            {i.change_type === 'removed' ? i.observation_preview : <a href={`/console/memories/${bare(i.memory_id)}`}>{i.observation_preview}</a>}
          </p>
          <p class="hint">
            importance {i.importance}
            {i.changed?.length ? ` · changed: ${i.changed.join(', ')}` : ''}
          </p>
        </article>
      ))}
    </>
  );
}
