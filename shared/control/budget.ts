/**
 * The budget of one policy evaluation (see `evaluatePolicies`) and the process-wide queue its
 * slices take turns in.
 */

// ---------------------------------------------------------------------------------------------
// The budget of one evaluation.

export interface EvaluationBudget {
  /** Longest payload text evaluated at all; a longer one is held for review unread. */
  maxChars: number;
  /** Characters the regex engine may scan per evaluation (one DFA pass over the text = its length). */
  workChars: number;
  /** Milliseconds of evaluation work (the slices' own time, not time spent waiting for a turn). */
  timeMs: number;
  /** Work done before yielding to the event loop so other requests run in between. */
  sliceMs: number;
}

/**
 * `POST /v1/actions` accepts params up to 64 KB of JSON and an action name up to 256 characters:
 * decoded, that text never exceeds 64 KiB + 1 KiB. The dry run's params are not capped by the
 * route, so a longer text is held unread rather than scanned.
 */
export const MAX_EVALUATED_CHARS = 65 * 1024;
/**
 * The regex engine (re2js's DFA) scans each character once, so a rule without a required literal
 * costs one pass over the text. 8 Mi characters is 128 such rules on the largest action, or
 * every rule of a Starter tenant's full set (5 policies × 100 rules, plus the built-ins) on a 16 KB
 * one. Rules whose literals the prefilter does not find cost nothing and count nothing. Only
 * tenants' rules are metered: the built-ins are ours, bounded, and always evaluated in full.
 */
export const WORK_BUDGET_CHARS = 8 * 1024 * 1024;
/** The position search (re2js's NFA) costs about ten DFA passes a character. */
export const NFA_COST = 10;
/**
 * Time budget of tenants' rules, compiling their patterns included (compiling is not free when a
 * pattern is not cached): it bounds what the character count misjudges. It counts only the time spent on the
 * rules themselves, not waits for a turn, so a loaded server holds no action merely for being busy.
 * workerd freezes the clock while code runs, so there the work budget is what binds.
 */
export const TIME_BUDGET_MS = 500;
/** Slices of about 1 ms (or one rule, when a rule takes longer): another tenant's request waits at most one slice per turn of the loop. */
export const SLICE_MS = 1;

export const EVALUATION_BUDGET: EvaluationBudget = { maxChars: MAX_EVALUATED_CHARS, workChars: WORK_BUDGET_CHARS, timeMs: TIME_BUDGET_MS, sliceMs: SLICE_MS };

/** The reason an evaluation stopped early gives, with what ran out. */
export const BUDGET_REASON_PREFIX = 'Policy evaluation budget exceeded';

// One process-wide queue of evaluation slices, served one per macrotask (setImmediate on Node, a
// zero timeout in workerd), so concurrent evaluations take turns with each other and with every
// other request's I/O instead of running back to back.
const macrotask: (f: () => void) => void = (f) => ((globalThis as { setImmediate?: (f: () => void) => void }).setImmediate ?? ((g) => setTimeout(g, 0)))(f);
const waiting: Array<() => void> = [];
let serving = false;
function serve() {
  const next = waiting.shift();
  if (!next) {
    serving = false;
    return;
  }
  next();
  macrotask(serve);
}
export function nextSlice(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!serving) {
      serving = true;
      macrotask(serve);
    }
  });
}
