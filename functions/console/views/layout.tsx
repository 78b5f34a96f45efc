/** @jsxImportSource hono/jsx */
import type { Child } from 'hono/jsx';
import { assetUrls } from '../assets';

/** Pages of the signed-in console, in the navigation's order. */
export const NAV = [
  { href: '/console/approvals', label: 'Approvals' },
  { href: '/console/actions', label: 'Actions' },
  { href: '/console/policies', label: 'Policies' },
  { href: '/console/audit', label: 'Audit' },
  { href: '/console/rollback', label: 'Rollback' },
  { href: '/console/replay', label: 'Replay' },
  { href: '/console/memories', label: 'Memories' },
  { href: '/console/webhooks', label: 'Webhooks' },
  { href: '/console/traces', label: 'Traces' },
  { href: '/console/connected-apps', label: 'Connected apps' },
  { href: '/console/overview', label: 'Overview' },
] as const;

const HTMX_CONFIG = JSON.stringify({ includeIndicatorStyles: false, allowEval: false, allowScriptTags: false, selfRequestsOnly: true });

export interface Viewer {
  email: string;
  tier: string;
  csrfToken: string;
}

/** Every page: head with our stylesheet and scripts (no inline ones), navigation, sign-out. */
export function Layout(props: { title: string; current?: string; viewer?: Viewer; children: Child }) {
  const { viewer } = props;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="htmx-config" content={HTMX_CONFIG} />
        <title>{`${props.title} · engram console`}</title>
        <link rel="stylesheet" href={assetUrls.style} />
        {viewer ? <script src={assetUrls.htmx} defer /> : null}
        {viewer ? <script src={assetUrls.sse} defer /> : null}
        {viewer ? <script src={assetUrls.script} defer /> : null}
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href="/console">
            engram console
          </a>
          {viewer ? (
            <nav aria-label="Console">
              <ul>
                {NAV.map((n) => (
                  <li>
                    <a href={n.href} aria-current={props.current === n.href ? 'page' : undefined}>
                      {n.label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
          ) : null}
          {viewer ? (
            <div class="who">
              <span title={`${viewer.email} · ${viewer.tier}`}>
                {viewer.email} · {viewer.tier}
              </span>
              <form method="post" action="/console/sign-out">
                <CsrfField token={viewer.csrfToken} />
                <button type="submit" class="secondary">
                  Sign out
                </button>
              </form>
            </div>
          ) : null}
        </header>
        <main id="main">{props.children}</main>
      </body>
    </html>
  );
}

export const CSRF_FIELD = '_csrf';

export const CsrfField = (props: { token: string }) => <input type="hidden" name={CSRF_FIELD} value={props.token} />;

/** A refusal or an outcome, announced to screen readers; `denied` is a decision taken (not an error), shown as a denial. */
export const Notice = (props: { kind: 'ok' | 'bad' | 'warn' | 'denied'; children: Child }) => (
  <p class={`notice ${props.kind}`} role={props.kind === 'bad' ? 'alert' : 'status'}>
    {props.children}
  </p>
);
