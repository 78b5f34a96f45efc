/** The console's stylesheet: calm colours, readable type, generous spacing; light and dark. */
export const STYLE = `
:root {
  --bg: #f6f7f9; --panel: #ffffff; --text: #1d2330; --muted: #5a6478; --line: #dde1e8;
  --accent: #2f5fd0; --accent-text: #ffffff; --ok: #1f7a4d; --ok-bg: #e6f4ec; --warn: #8a5a00; --warn-bg: #fff4dc;
  --bad: #b3261e; --bad-bg: #fdeceb; --radius: 10px; --shadow: 0 1px 2px rgba(20, 30, 50, .06), 0 2px 8px rgba(20, 30, 50, .04);
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 16px; line-height: 1.5; color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #14171d; --panel: #1c2029; --text: #e6e9ef; --muted: #a3acbd; --line: #2e3441; --accent: #7ea2ff; --accent-text: #0c1020;
    --ok: #6fd3a0; --ok-bg: #173326; --warn: #f0c060; --warn-bg: #3a2e12; --bad: #ff8a80; --bad-bg: #3d1a18; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: var(--panel); padding: .5rem 1rem; z-index: 2; }
.top { display: flex; align-items: center; gap: .6rem; padding: .5rem 1rem; background: var(--panel); border-bottom: 1px solid var(--line); }
.brand { font-weight: 700; font-size: 1rem; text-decoration: none; color: var(--text); white-space: nowrap; }
.top nav { min-width: 0; overflow-x: auto; }
.top nav ul { display: flex; gap: 0; list-style: none; margin: 0; padding: 0; }
.top nav a { display: block; padding: .3rem .4rem; border-radius: 6px; text-decoration: none; color: var(--muted); font-size: .875rem; white-space: nowrap; }
.top nav a[aria-current="page"] { background: var(--bg); color: var(--text); font-weight: 600; }
.top .who { margin-left: auto; display: flex; align-items: center; gap: .5rem; color: var(--muted); font-size: .8rem; min-width: 0; white-space: nowrap; }
.top .who span { overflow: hidden; text-overflow: ellipsis; max-width: 9rem; }
.top .who button { padding: .25rem .6rem; font-size: .8rem; }
@media (max-width: 79.9rem) { .top { flex-wrap: wrap; } .top nav { overflow-x: visible; } .top nav ul { flex-wrap: wrap; } }
main { max-width: 72rem; margin: 0 auto; padding: 2rem; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; } h2 { font-size: 1.1rem; margin: 0; }
.lead { color: var(--muted); margin: 0 0 1.5rem; }
.panel h2 { margin-bottom: .75rem; } main > h2 { margin: 2rem 0 .75rem; }
.panel, .card { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); box-shadow: var(--shadow); padding: 1.25rem 1.5rem; margin-bottom: 1rem; }
.card header { display: flex; align-items: baseline; gap: .75rem; flex-wrap: wrap; margin-bottom: .75rem; }
.card h2 code { font-size: 1.05rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1.25rem; margin: 0 0 1rem; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; overflow-x: auto; font-size: .85rem; margin: .5rem 0 0; }
details.params summary { cursor: pointer; } details.params pre { max-height: 28rem; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
pre mark, blockquote mark { background: var(--bad-bg); color: var(--bad); font-weight: 700; padding: 0; border-radius: 2px; outline: 1px solid var(--bad); }
blockquote.held-text { margin: 0 0 1rem; padding: .75rem 1rem; border-left: 4px solid var(--line); background: var(--bg); border-radius: 0 6px 6px 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.badge.trust-verified { background: var(--ok-bg); color: var(--ok); border-color: transparent; } .badge.trust-external { background: var(--warn-bg); color: var(--warn); border-color: transparent; }
.decided .notice { margin: 0 0 1rem; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
mark { background: var(--warn-bg); color: var(--warn); padding: 0 .2rem; border-radius: 3px; }
.badge { display: inline-block; padding: .1rem .6rem; border-radius: 999px; font-size: .8rem; font-weight: 600; background: var(--bg); color: var(--muted); border: 1px solid var(--line); }
.badge.pending_review { background: var(--warn-bg); color: var(--warn); border-color: transparent; }
.badge.approved, .badge.executed, .badge.ok { background: var(--ok-bg); color: var(--ok); border-color: transparent; }
.badge.denied, .badge.failed, .badge.bad { background: var(--bad-bg); color: var(--bad); border-color: transparent; }
.risk { color: var(--muted); font-size: .9rem; }
.card h3 { margin: 0; font-size: 1rem; } .card > p:first-child { margin-top: 0; } .card > p:last-child { margin-bottom: 0; } output.notice { display: block; } output.notice:empty { display: none; }
form.decide { display: grid; gap: .75rem; border-top: 1px solid var(--line); padding-top: 1rem; margin-top: 1rem; }
label { display: block; font-weight: 600; font-size: .9rem; margin-bottom: .25rem; }
.hint { color: var(--muted); font-size: .85rem; font-weight: 400; }
input[type=text], input[type=password], input[type=datetime-local], input[type=search], select, textarea {
  width: 100%; padding: .55rem .7rem; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); color: var(--text); font: inherit; }
.row { display: flex; gap: .75rem; flex-wrap: wrap; align-items: end; } .row > * { flex: 1 1 12rem; } .row > .actions { flex: 0 0 auto; }
.actions { display: flex; gap: .5rem; flex-wrap: wrap; }
button, .button { font: inherit; font-weight: 600; padding: .5rem 1.1rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-text); cursor: pointer; text-decoration: none; display: inline-block; }
button.secondary, .button.secondary { background: transparent; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); color: #fff; }
button.link { background: none; border: none; color: var(--muted); padding: .3rem .5rem; font-weight: 500; text-decoration: underline; }
.notice { border-radius: 6px; padding: .75rem 1rem; margin: .75rem 0; }
.notice.bad, .notice.denied { background: var(--bad-bg); color: var(--bad); } .notice.denied { border-left: 4px solid var(--bad); font-weight: 600; } .notice.denied a { color: inherit; } .notice.ok { background: var(--ok-bg); color: var(--ok); } .notice.warn { background: var(--warn-bg); color: var(--warn); }
.tabs { display: flex; gap: .5rem; margin: 0 0 1.25rem; flex-wrap: wrap; padding: 0; list-style: none; }
.tabs a { padding: .35rem .9rem; border-radius: 999px; border: 1px solid var(--line); text-decoration: none; color: var(--muted); background: var(--panel); }
.tabs a[aria-current="page"] { border-color: var(--accent); color: var(--accent); font-weight: 600; }
.empty { text-align: center; color: var(--muted); padding: 2.5rem 1rem; }
table { width: 100%; border-collapse: collapse; background: var(--panel); font-size: .92rem; }
th, td { text-align: left; padding: .55rem .75rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td.mono { font-size: .82rem; } td.when { white-space: nowrap; }
th { color: var(--muted); font-weight: 600; font-size: .85rem; }
.table-wrap { border: 1px solid var(--line); border-radius: var(--radius); overflow-x: auto; box-shadow: var(--shadow); margin-bottom: 1rem; }
.signin { max-width: 26rem; margin: 4rem auto; }
.signin h1 { margin-bottom: .5rem; }
.signin form { display: grid; gap: 1rem; }
#cards:not(:empty) + .empty { display: none; }
.pager { display: flex; justify-content: space-between; align-items: center; color: var(--muted); }
`;
