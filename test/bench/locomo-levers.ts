/**
 * Retrieval levers on LoCoMo, one at a time: the ranking of functions/memories (BM25 over the
 * Postgres lexemes, cosine over the USE vectors, fusion, neighbour shares) replayed in memory, so a
 * lever costs seconds instead of a full locomo.ts run (minutes of storing through the API).
 *
 *   npx tsx test/bench/locomo-levers.ts --data <dir of LoCoMo json files, or LOCOMO_DATA> [--cache /tmp/locomo-levers.json]
 *                                       [--embedding-cache <locomo.ts's>] [--runs <regexp of names>]
 *
 * The first run computes every turn's and question's lexemes (to_tsvector('english') in PGlite,
 * exactly what the generated search_tsv holds) and USE vectors, and keeps them in --cache. The
 * protocol is locomo.ts's: every turn a memory, categories 1-4, search within the conversation (its
 * statistics are the conversation's, as a tag-filtered search counts them), a hit when an evidence
 * turn is in the top k. Neighbours are the turns before and after in the conversation, as the bench
 * stores them in order. Prints recall@5/@10 per configuration, for each half of the conversations
 * (A: the 1st, 3rd, … file in name order; B: the 2nd, 4th, …; tune on A, check on B) and all of them,
 * and recall@10 per conversation; locomo.ts stays the measurement of record.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { toStoredVector } from '../../shared/memory/embeddings';
import { useEmbedder } from '../../shared/node/embed-use';

const { values: args } = parseArgs({
  options: {
    data: { type: 'string', default: process.env.LOCOMO_DATA ?? '' },
    cache: { type: 'string', default: '/tmp/locomo-levers.json' },
    // locomo.ts's --embedding-cache: the same USE vectors per text, so the first run skips embedding.
    'embedding-cache': { type: 'string' },
    // only the configurations whose name matches this regular expression
    runs: { type: 'string', default: '' },
  },
});
if (!args.data) throw new Error('pass the LoCoMo data directory: --data <dir> or LOCOMO_DATA');

interface Doc {
  dia: string;
  lex: Record<string, number>;
  len: number;
  v: number[];
  i: number;
}
interface Question {
  q: string;
  ev: string[];
  lex: Record<string, number>;
  v: number[];
  /** The vector of the question without its stopwords (added to an older cache on load). */
  vs?: number[];
}
interface Conversation {
  id: string;
  turns: Doc[];
  qa: Question[];
}

async function prepare(): Promise<Conversation[]> {
  if (existsSync(args.cache)) return withStrippedVectors(JSON.parse(await readFile(args.cache, 'utf8')) as Conversation[]);
  const pg = new PGlite();
  const lexemes = async (text: string) => {
    const r = await pg.query<{ lexeme: string; tf: number }>(
      `SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(to_tsvector('english', $1))`,
      [text],
    );
    return Object.fromEntries(r.rows.map((x) => [x.lexeme, x.tf]));
  };
  const inner = useEmbedder();
  const known: Record<string, number[]> = args['embedding-cache']
    ? ((JSON.parse(await readFile(args['embedding-cache'], 'utf8')) as Record<string, Record<string, number[]>>).use ?? {})
    : {};
  const embedder = {
    async embed(texts: string[]) {
      const todo = texts.filter((t) => !known[t]);
      if (todo.length) (await inner.embed(todo)).forEach((v, i) => (known[todo[i]] = v));
      return texts.map((t) => known[t]);
    },
  };
  const out: Conversation[] = [];
  for (const f of (await readdir(args.data)).filter((f) => f.endsWith('.json')).sort()) {
    const raw = JSON.parse(await readFile(join(args.data, f), 'utf8')) as Record<string, any>;
    const sessions = Object.keys(raw)
      .filter((k) => /^session_\d+$/.test(k))
      .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
    const turns = sessions
      .flatMap((k) => raw[k] as { speaker: string; dia_id: string; text: string }[])
      .map((t) => ({ dia: t.dia_id, text: `${t.speaker}: ${t.text}` }));
    const qa = (raw.qa as { question: string; evidence?: string[]; category: number }[])
      .filter((q) => q.category >= 1 && q.category <= 4 && q.evidence?.length)
      .map((q) => ({ q: q.question, ev: q.evidence!.flatMap((e) => e.split(/[;,\s]+/)).filter(Boolean) }));
    const vectors = (await embedder.embed([...turns.map((t) => t.text), ...qa.map((q) => q.q)])).map(toStoredVector);
    const docs: Doc[] = [];
    for (const [i, t] of turns.entries()) {
      const lex = await lexemes(t.text);
      docs.push({ dia: t.dia, lex, len: Object.keys(lex).length, v: vectors[i], i });
    }
    const questions: Question[] = [];
    for (const [j, q] of qa.entries()) questions.push({ ...q, lex: await lexemes(q.q), v: vectors[turns.length + j] });
    out.push({ id: f.replace('.json', ''), turns: docs, qa: questions });
    console.error(`  prepared conversation ${f}: ${docs.length} turns, ${questions.length} questions`);
  }
  await writeFile(args.cache, JSON.stringify(out));
  return withStrippedVectors(out);
}

/** Each question's vector without its stopwords (stripStopwords), computed once and kept in the cache. */
async function withStrippedVectors(data: Conversation[]): Promise<Conversation[]> {
  if (data.every((c) => c.qa.every((q) => q.vs))) return data;
  const { stripStopwords } = await import('../../shared/memory/stopwords');
  const texts = data.flatMap((c) => c.qa.map((q) => stripStopwords(q.q)));
  const vectors = (await useEmbedder().embed(texts)).map(toStoredVector);
  let i = 0;
  for (const c of data) for (const q of c.qa) q.vs = vectors[i++];
  await writeFile(args.cache, JSON.stringify(data));
  return data;
}

interface Lever {
  k1?: number;
  b?: number; // BM25
  n?: number; // candidates per list
  w?: number; // semantic weight
  fusion?: 'best' | 'minmax' | 'rrf';
  mapped?: boolean; // BM25 as 1 - exp(-s/10) before fusion
  shares?: number[]; // neighbour shares by distance
  top?: number; // hits that lend to neighbours
  tenantStats?: boolean; // statistics over all conversations, not the searched one
  prf?: boolean; // pseudo-relevance feedback: 10 terms of the top 5 at weight 0.2
  when?: boolean; // time words added at 0.2 to questions asking when
  only?: 'semantic' | 'keyword';
  // Memories without a match of their own rank after every memory with one (hybrid.ts). A keyword
  // hit matches when its BM25 reaches `kwFrac` of the best; a semantic candidate when its cosine
  // passes the weakest candidate's, `cos`, and `frac` of the best one's. With `any`, a semantic
  // match is the cosine alone, for every memory ranked (a neighbour outside the candidate list too),
  // and the weakest candidate's plays no part.
  match?: { cos?: number; frac?: number; kwFrac?: number; any?: boolean };
  // With a match rule: memories without a match rank by this fraction of their score among the
  // others instead of after every match.
  unmatched?: number;
  // Neighbour shares for the memories stored after a hit, where they differ from those before it (`shares`).
  after?: number[];
  // Dates left out of the query's BM25 (numbers and month names: a question "on 7 May" names the
  // day of a session, which the turns do not say).
  noDates?: boolean;
  // The question's vector without its stopwords for the semantic list ('stripped'), or the mean of both ('both').
  semQuery?: 'stripped' | 'both';
  // The match rule's cosine from the plain question's vector while `semQuery` ranks (the best one
  // over the same semantic candidates): the mean vector ranks better but finds unrelated memories close.
  plainMatch?: boolean;
  // A memory with any query word in it matches (a neighbour outside the keyword candidates too).
  wordMatch?: boolean;
  // A neighbour with any query word in it matches (as the service reads it with the neighbours).
  wordNeighbours?: boolean;
}

/**
 * Which half of the data a conversation is in, by its index among the data directory's files in
 * name order (as locomo.ts splits them): levers are tuned on half A and checked on half B.
 */
const halfOf = (index: number) => (index % 2 ? 'b' : 'a');

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
type Stats = { n: number; avg: number; df: Map<string, number> };
const statsOf = (docs: Doc[]): Stats => {
  const df = new Map<string, number>();
  for (const d of docs) for (const l in d.lex) df.set(l, (df.get(l) ?? 0) + 1);
  return { n: docs.length, avg: docs.reduce((s, d) => s + d.len, 0) / docs.length, df };
};
const idf = (st: Stats, l: string) => {
  const df = st.df.get(l) ?? 1;
  return Math.log(1 + (st.n - df + 0.5) / (df + 0.5));
};

function bm25(docs: Doc[], st: Stats, query: Record<string, number>, k1: number, b: number) {
  const out: { d: Doc; s: number }[] = [];
  for (const d of docs) {
    let s = 0;
    for (const l in query) {
      const tf = d.lex[l];
      if (tf) s += query[l] * idf(st, l) * ((tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * d.len) / Math.max(st.avg, 1))));
    }
    if (s > 0) out.push({ d, s });
  }
  return out.sort((x, y) => y.s - x.s);
}

const MONTHS = ['januari', 'februari', 'march', 'april', 'may', 'june', 'juli', 'august', 'septemb', 'octob', 'novemb', 'decemb'];
const WHEN = /\bwhen\b|what (date|year|month|day|time)|how long ago/i;
const TIME_WORDS = ['yesterday', 'last', 'week', 'month', 'year', 'ago', 'today', 'tomorrow', 'weekend', 'next', 'recent'];

function evaluate(data: Conversation[], o: Lever) {
  const tenant = statsOf(data.flatMap((c) => c.turns));
  const per: { id: string; n: number; h5: number; h10: number }[] = [];
  for (const c of data) {
    const st = o.tenantStats ? tenant : statsOf(c.turns);
    const counts = { id: c.id, n: 0, h5: 0, h10: 0 };
    per.push(counts);
    for (const q of c.qa) {
      const n = o.n ?? 40;
      const k1 = o.k1 ?? 1.2;
      const b = o.b ?? 0.75;
      const qv = o.semQuery === 'stripped' ? q.vs! : o.semQuery === 'both' ? q.v.map((x, i) => (x + q.vs![i]) / 2) : q.v;
      const sem = c.turns
        .map((d) => ({ d, s: dot(qv, d.v) }))
        .sort((x, y) => y.s - x.s)
        .slice(0, n);
      // The service's BM25 counts each distinct query lexeme once.
      let query = Object.fromEntries(
        Object.keys(q.lex)
          .filter((l) => !(o.noDates && (/^\d+$/.test(l) || MONTHS.includes(l))))
          .map((l) => [l, 1]),
      );
      if (o.when && WHEN.test(q.q)) query = { ...Object.fromEntries(TIME_WORDS.map((t) => [t, 0.2])), ...query };
      let kw = bm25(c.turns, st, query, k1, b);
      if (o.prf && kw.length) {
        const weights = new Map<string, number>();
        for (const { d, s } of kw.slice(0, 5)) for (const l in d.lex) if (!(l in query)) weights.set(l, (weights.get(l) ?? 0) + (idf(st, l) * s) / kw[0].s);
        const extra = [...weights].sort((x, y) => y[1] - x[1]).slice(0, 10);
        kw = bm25(c.turns, st, { ...query, ...Object.fromEntries(extra.map(([l]) => [l, 0.2])) }, k1, b);
      }
      kw = kw.slice(0, n);
      const score = new Map<Doc, number>();
      const add = (d: Doc, s: number) => score.set(d, (score.get(d) ?? 0) + s);
      const text = (s: number) => (o.mapped ? 1 - Math.exp(-s / 10) : s);
      if (o.only === 'semantic') sem.forEach((x) => add(x.d, x.s));
      else if (o.only === 'keyword') kw.forEach((x) => add(x.d, x.s));
      else if (o.fusion === 'rrf') {
        sem.forEach((x, r) => add(x.d, 0.5 / (60 + r)));
        kw.forEach((x, r) => add(x.d, 0.5 / (60 + r)));
      } else {
        const w = o.w ?? 0.3;
        const norm = (xs: number[]) => {
          const hi = Math.max(1e-9, ...xs);
          const lo = o.fusion === 'minmax' ? Math.min(...xs) : 0;
          return (x: number) => (hi > lo ? (x - lo) / (hi - lo) : 1);
        };
        const ns = norm(sem.map((x) => x.s));
        const nk = norm(kw.map((x) => text(x.s)));
        sem.forEach((x) => add(x.d, w * ns(x.s)));
        kw.forEach((x) => add(x.d, (1 - w) * nk(text(x.s))));
      }
      const matched = new Set<Doc>();
      if (o.wordMatch) for (const d of c.turns) if (Object.keys(query).some((l) => d.lex[l])) matched.add(d);
      const mv = o.plainMatch ? q.v : qv;
      const matchCos = (d: Doc) => (o.plainMatch ? dot(mv, d.v) : undefined);
      const hi = o.plainMatch ? Math.max(0, ...sem.map((x) => dot(mv, x.d.v))) : (sem[0]?.s ?? 0);
      const lo = Math.min(...sem.map((x) => matchCos(x.d) ?? x.s));
      const cosineMatch = (cos: number, candidate: boolean) =>
        cos > 0 && cos >= (o.match?.cos ?? 0) && cos >= (o.match?.frac ?? 0) * hi && (!!o.match?.any || (candidate && (cos > lo || hi === lo)));
      if (o.match) {
        for (const x of kw) if (x.s >= (o.match.kwFrac ?? 0) * kw[0].s) matched.add(x.d);
        for (const x of sem) if (cosineMatch(matchCos(x.d) ?? x.s, true)) matched.add(x.d);
      }
      const order =
        o.unmatched === undefined
          ? (x: [Doc, number], y: [Doc, number]) => Number(matched.has(y[0])) - Number(matched.has(x[0])) || y[1] - x[1]
          : (x: [Doc, number], y: [Doc, number]) => (matched.has(y[0]) ? 1 : o.unmatched!) * y[1] - (matched.has(x[0]) ? 1 : o.unmatched!) * x[1];
      if (o.shares) {
        const lenders = [...score].sort(order).slice(0, o.top ?? 20);
        for (const [d, s] of lenders) {
          const after = o.after ?? o.shares;
          for (let k = 0; k < Math.max(o.shares.length, after.length); k++) {
            for (const [nb, part] of [
              [c.turns[d.i - k - 1], o.shares[k] ?? 0],
              [c.turns[d.i + k + 1], after[k] ?? 0],
            ] as const)
              if (nb) {
                add(nb, part * s);
                if (o.match?.any && cosineMatch(dot(mv, nb.v), false)) matched.add(nb);
                if (o.wordNeighbours && Object.keys(query).some((l) => nb.lex[l])) matched.add(nb);
              }
          }
        }
      }
      const top = [...score]
        .sort(order)
        .slice(0, 10)
        .map(([d]) => q.ev.includes(d.dia));
      counts.n++;
      if (top.slice(0, 5).some(Boolean)) counts.h5++;
      if (top.some(Boolean)) counts.h10++;
    }
  }
  return per;
}

const data = await prepare();
const base: Lever = { fusion: 'best', mapped: true };
const final: Lever = { k1: 0.9, b: 0.4, fusion: 'minmax', shares: [0.5, 0.4] };
// functions/memories/hybrid.ts as it is: `final` with its match rule and candidate count.
const current: Lever = { ...final, n: 30, match: { frac: 0.5, any: true } };
const runs: [string, Lever][] = [
  ['semantic alone, stopwords out', { only: 'semantic', semQuery: 'stripped' }],
  ['semantic alone, mean of both vectors', { only: 'semantic', semQuery: 'both' }],
  ['record + stripped semantic query', { ...current, semQuery: 'stripped' }],
  ['record + mean semantic query', { ...current, semQuery: 'both' }],
  ['record + word match', { ...current, wordMatch: true }],
  ['record + word match + stripped', { ...current, wordMatch: true, semQuery: 'stripped' }],
  ['record + word match + mean', { ...current, wordMatch: true, semQuery: 'both' }],
  ['record + neighbour words + mean, 30 lenders', { ...current, wordNeighbours: true, semQuery: 'both', top: 30 }],
  ['record + neighbour words, 30 lenders', { ...current, wordNeighbours: true, top: 30 }],
  ['record + neighbour words', { ...current, wordNeighbours: true }],
  ['record, 30 lenders', { ...current, top: 30 }],
  ['record + mean, 30 lenders', { ...current, semQuery: 'both', top: 30 }],
  ['record + word match, 30 lenders', { ...current, wordMatch: true, top: 30 }],
  ['record + word match + mean, 30 lenders', { ...current, wordMatch: true, semQuery: 'both', top: 30 }],
  ['record + mean ranks, plain matches, 30 lenders', { ...current, semQuery: 'both', plainMatch: true, top: 30 }],
  ['record + mean ranks, plain matches', { ...current, semQuery: 'both', plainMatch: true }],
  ['record + neighbour words + mean ranks, plain matches, 30 lenders', { ...current, wordNeighbours: true, semQuery: 'both', plainMatch: true, top: 30 }],
  ['record + word match, match share 0.45', { ...current, wordMatch: true, match: { frac: 0.45, any: true } }],
  ['record + word match, semantic weight 0.35', { ...current, wordMatch: true, w: 0.35 }],
  ['record + word match, 35 candidates', { ...current, wordMatch: true, n: 35 }],
  ...[0.25, 0.35, 0.4].map((w): [string, Lever] => [`record + stripped, semantic weight ${w}`, { ...current, semQuery: 'stripped', w }]),
  ...[0.4, 0.45, 0.55].map((frac): [string, Lever] => [
    `record + stripped, match share ${frac}`,
    { ...current, semQuery: 'stripped', match: { frac, any: true } },
  ]),
  ...[25, 40].map((n): [string, Lever] => [`record + stripped, ${n} candidates`, { ...current, semQuery: 'stripped', n }]),
  ...[10, 30].map((top): [string, Lever] => [`record + stripped, ${top} lenders`, { ...current, semQuery: 'stripped', top }]),
  ['record + stripped, shares 0.5 0.4 0.2', { ...current, semQuery: 'stripped', shares: [0.5, 0.4, 0.2] }],
  ['semantic alone', { only: 'semantic' }],
  ['keyword (BM25 1.2/0.75) alone', { only: 'keyword' }],
  ['keyword (BM25 0.9/0.4) alone', { only: 'keyword', k1: 0.9, b: 0.4 }],
  ['previous hybrid (0.3, divide by best)', base],
  ['  + BM25 k1 0.9, b 0.4', { ...base, k1: 0.9, b: 0.4 }],
  ['  + min-max normalisation', { ...base, fusion: 'minmax' }],
  ['  + raw BM25 (no 1-exp map)', { ...base, mapped: false }],
  ['  + 100 candidates per list', { ...base, n: 100 }],
  ['  + semantic weight 0.2', { ...base, w: 0.2 }],
  ['  + semantic weight 0.4', { ...base, w: 0.4 }],
  ['  + reciprocal rank fusion k=60', { ...base, fusion: 'rrf' }],
  ['  + neighbours ±1 (0.4)', { ...base, shares: [0.4] }],
  ['  + neighbours ±2 (0.4, 0.2)', { ...base, shares: [0.4, 0.2] }],
  ['  + pseudo-relevance feedback', { ...base, prf: true }],
  ['  + time words for "when" questions', { ...base, when: true }],
  ['  + statistics of all conversations', { ...base, tenantStats: true }],
  ['new hybrid (all kept levers)', final],
  ['  new hybrid without neighbours', { ...final, shares: undefined }],
  ['  new hybrid without min-max', { ...final, fusion: 'best', mapped: true }],
  ['  new hybrid without k1/b', { ...final, k1: 1.2, b: 0.75 }],
  ['  new hybrid with shares 0.4, 0.2', { ...final, shares: [0.4, 0.2] }],
  ['  new hybrid + pseudo-relevance feedback', { ...final, prf: true }],
  ['  new hybrid + time words', { ...final, when: true }],
  ['  new hybrid + statistics of all conversations', { ...final, tenantStats: true }],
  ["  match rule: keyword hit, or a candidate's cosine above the weakest candidate's", { ...final, match: {} }],
  ["  match rule: keyword hit, or a candidate's cosine ≥ 0.5 × best", { ...final, match: { frac: 0.5 } }],
  ["  match rule: BM25 ≥ 0.3 × best, or a candidate's cosine above the weakest", { ...final, match: { kwFrac: 0.3 } }],
  ...[0.2, 0.3, 0.4].map((cos): [string, Lever] => [`  match rule: keyword hit, or any memory's cosine ≥ ${cos}`, { ...final, match: { cos, any: true } }]),
  ...[0.4, 0.45, 0.5, 0.55, 0.6, 0.7].map((frac): [string, Lever] => [
    `  match rule: keyword hit, or any memory's cosine ≥ ${frac} × best`,
    { ...final, match: { frac, any: true } },
  ]),
  ["  match rule: keyword hit, or any memory's cosine ≥ 0.5 × best and ≥ 0.25", { ...final, match: { frac: 0.5, cos: 0.25, any: true } }],
  ['hybrid of record (match rule 0.5, 30 candidates per list)', current],
  ...[25, 35, 40].map((n): [string, Lever] => [`  ${n} candidates per list`, { ...current, n }]),
  ...[0.4, 0.45, 0.55].map((frac): [string, Lever] => [`  match share ${frac}`, { ...current, match: { frac, any: true } }]),
  ...[0.1, 0.3, 0.5].map((f): [string, Lever] => [`  memories without a match ranked by ${f} × their score among matches`, { ...current, unmatched: f }]),
  ['  neighbours after a hit 0.6, 0.5, before it 0.4, 0.3', { ...current, shares: [0.4, 0.3], after: [0.6, 0.5] }],
  ...[0.25, 0.35].map((w): [string, Lever] => [`  semantic weight ${w}`, { ...current, w }]),
  ...(
    [
      [0.7, 0.4],
      [0.9, 0.5],
    ] as const
  ).map(([k1, b]): [string, Lever] => [`  BM25 k1 ${k1}, b ${b}`, { ...current, k1, b }]),
  ['  + time words for "when" questions', { ...current, when: true }],
  ['  + dates left out of the query', { ...current, noDates: true }],
  ['  + both', { ...current, when: true, noDates: true }],
];
/** Recall over some conversations' counts: "@5 / @10". */
const recall = (per: ReturnType<typeof evaluate>) => {
  const n = per.reduce((s, c) => s + c.n, 0);
  const at = (k: 'h5' | 'h10') => (n ? (per.reduce((s, c) => s + c[k], 0) / n).toFixed(3) : '–');
  return `${at('h5')} / ${at('h10')}`;
};
console.log('| configuration | half A recall@5 / @10 | half B recall@5 / @10 | all recall@5 / @10 | recall@10 per conversation |\n|---|---|---|---|---|');
for (const [name, lever] of runs.filter(([name]) => new RegExp(args.runs).test(name))) {
  const per = evaluate(data, lever);
  const half = (h: 'a' | 'b') => per.filter((_, i) => halfOf(i) === h);
  const each = per.map((c) => `${c.id} ${(c.h10 / c.n).toFixed(3)}`).join(', ');
  console.log(`| ${name} | ${recall(half('a'))} | ${recall(half('b'))} | ${recall(per)} | ${each} |`);
}
