/** @jsxImportSource hono/jsx */
import { Layout, Notice } from './layout';

/** The sign-in form: an API key, exchanged for a session; the key is not kept in the browser. */
export function SignInPage(props: { problem?: string; ended?: string; next?: string }) {
  return (
    <Layout title="Sign in">
      <section class="signin panel">
        <h1>Sign in</h1>
        <p class="lead">Sign in with an API key of your account. The key is checked once and not kept in the browser; the session lasts 12 hours.</p>
        {props.ended ? <Notice kind="warn">{props.ended}</Notice> : null}
        {props.problem ? <Notice kind="bad">{props.problem}</Notice> : null}
        <form method="post" action="/console/sign-in">
          {props.next ? <input type="hidden" name="next" value={props.next} /> : null}
          <div>
            <label for="api_key">API key</label>
            <input type="password" id="api_key" name="api_key" autocomplete="off" required placeholder="sk_…" />
          </div>
          <div class="actions">
            <button type="submit">Sign in</button>
          </div>
        </form>
      </section>
    </Layout>
  );
}

/** A page-level refusal (a limit, a tier without the feature) in the layout. */
export function ProblemPage(props: { title: string; message: string; viewer?: Parameters<typeof Layout>[0]['viewer'] }) {
  return (
    <Layout title={props.title} viewer={props.viewer}>
      <h1>{props.title}</h1>
      <Notice kind="bad">{props.message}</Notice>
      <p>
        <a href="/console">Back to the console</a>
      </p>
    </Layout>
  );
}
