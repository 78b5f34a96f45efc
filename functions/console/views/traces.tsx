/** @jsxImportSource hono/jsx */
import { raw } from 'hono/html';
import type { certificate, getTrace, listTraces } from '../../traces/service';
import { Layout, type Viewer } from './layout';

type Listed = Awaited<ReturnType<typeof listTraces>>;
type Shown = Awaited<ReturnType<typeof getTrace>>;
type Certificate = Awaited<ReturnType<typeof certificate>>;

const when = (iso: string | null) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '—');
/**
 * A step's text for a <pre> whose textContent is that text exactly, as the browser check hashes it:
 * the parser drops a newline right after <pre> and turns a carriage return into a line feed, so the
 * first is doubled and the second written as a character reference.
 */
const preText = (text: string) =>
  raw((text.startsWith('\n') ? '\n' : '') + text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\r/g, '&#13;'));
const STATUS_CLASS: Record<string, string> = { completed: 'ok', failed: 'bad', interrupted: 'bad' };

export function TracesPage(props: { viewer: Viewer; listed: Listed }) {
  return (
    <Layout title="Traces" current="/console/traces" viewer={props.viewer}>
      <h1>Traces</h1>
      <p class="lead">An agent's reasoning, step by step, hash-chained and signed when it ends.</p>
      {props.listed.traces.length ? (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Trace</th>
                <th scope="col">Agent</th>
                <th scope="col">Status</th>
                <th scope="col">Steps</th>
                <th scope="col">Started</th>
              </tr>
            </thead>
            <tbody>
              {props.listed.traces.map((t) => (
                <tr>
                  <td>
                    <a href={`/console/traces/${t.trace_id}`}>{t.description ?? t.trace_id}</a>
                  </td>
                  <td class="mono">{t.agent_id}</td>
                  <td>
                    <span class={`badge ${STATUS_CLASS[t.status] ?? ''}`}>{t.status}</span>
                  </td>
                  <td>{t.step_count}</td>
                  <td class="when">{when(t.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No traces yet.</p>
      )}
    </Layout>
  );
}

/**
 * One trace: its steps, and for a sealed one its certificate in a data attribute, which our script
 * checks in the browser with the SDK's verifier against what the page shows: each step's hash is
 * recomputed from its card, and the fields marked `data-certified` must read as certified.
 */
export function TracePage(props: { viewer: Viewer; shown: Shown; cert: Certificate | null }) {
  const { trace, steps } = props.shown;
  const { cert } = props;
  return (
    <Layout title="Trace" current="/console/traces" viewer={props.viewer}>
      <p>
        <a href="/console/traces">← All traces</a>
      </p>
      <h1>{trace.description ?? trace.trace_id}</h1>
      <dl class="facts panel">
        <dt>Trace</dt>
        <dd class="mono" data-certified="trace_id">
          {trace.trace_id}
        </dd>
        <dt>Agent</dt>
        <dd class="mono" data-certified="agent_id">
          {trace.agent_id}
        </dd>
        <dt>Status</dt>
        <dd>
          <span class={`badge ${STATUS_CLASS[trace.status] ?? ''}`} data-certified={cert ? 'status' : undefined}>
            {trace.status}
          </span>
        </dd>
        <dt>Started</dt>
        <dd>{when(trace.created_at)}</dd>
        <dt>Sealed</dt>
        <dd data-certified={cert ? 'signed_at' : undefined} data-format="time">
          {when(trace.signed_at)}
        </dd>
        <dt>Root hash</dt>
        <dd class="mono" data-certified={cert ? 'integrity_root_hash' : undefined}>
          {trace.integrity_root_hash ?? '—'}
        </dd>
      </dl>
      {cert ? (
        <section class="panel" id="trace-certificate" data-certificate={JSON.stringify(cert)}>
          <h2>Signature</h2>
          <p class="hint">
            {cert.signature_algorithm}, key {cert.key_id.slice(0, 16)}…, certificate version {cert.certificate_version}. Checked here in your browser against
            the public key, without trusting this server's word: both signatures, the chain, and each step below hashed from the text shown.
          </p>
          <button type="button" id="verify-signature">
            Verify in this browser
          </button>
          <output id="verify-result" class="notice" aria-live="polite" />
        </section>
      ) : null}
      <h2>Steps</h2>
      {steps.map((s) => (
        <article class="card" data-step-index={s.step_index} data-metadata={JSON.stringify(s.metadata)} data-created-at={s.created_at}>
          <header>
            <h3 class="mono">
              #{s.step_index} <span data-step-type>{s.type}</span>
            </h3>
            <span class="risk">{when(s.created_at)}</span>
          </header>
          <pre>{preText(s.content)}</pre>
          <p class="hint mono" title={s.chain_hash}>
            chain {s.chain_hash.slice(0, 16)}…
          </p>
        </article>
      ))}
    </Layout>
  );
}
