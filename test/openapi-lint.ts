import { fileURLToPath } from 'node:url';
import { lintConfig, lintFromString, loadConfig, type NormalizedProblem } from '@redocly/openapi-core';

/** The ruleset: Redocly's `recommended` plus the few changes next to it, each with its reason. */
export const REDOCLY_CONFIG = fileURLToPath(new URL('./redocly.yaml', import.meta.url));

export interface LintResult {
  errors: NormalizedProblem[];
  warnings: NormalizedProblem[];
  /** One line per problem: severity, rule, JSON pointer into the document, message. */
  report: string;
}

const line = (p: NormalizedProblem) => {
  const where = p.location[0]?.pointer ?? '#/';
  return `${p.severity} ${p.ruleId} at ${where}: ${p.message}`;
};

/** Lints an OpenAPI document in memory with Redocly's linter and the ruleset in test/redocly.yaml. */
export async function lintOpenApi(document: unknown): Promise<LintResult> {
  const config = await loadConfig({ configPath: REDOCLY_CONFIG });
  // A misspelt rule name or severity in the config is an error too, not a rule silently skipped.
  const configProblems = (await lintConfig({ config })).filter((p) => p.severity === 'error');
  if (configProblems.length) throw new Error(`test/redocly.yaml is invalid:\n${configProblems.map(line).join('\n')}`);
  // No `absoluteRef`: the document is self-contained, nothing outside it may be resolved.
  const problems = (await lintFromString({ source: JSON.stringify(document, null, 2), absoluteRef: 'openapi.json', config })).filter((p) => !p.ignored);
  const errors = problems.filter((p) => p.severity === 'error');
  const warnings = problems.filter((p) => p.severity === 'warn');
  const report = [
    ...errors.map(line),
    ...warnings.map(line),
    `OpenAPI lint (rules: test/redocly.yaml): ${errors.length} error(s), ${warnings.length} warning(s)`,
  ].join('\n');
  return { errors, warnings, report };
}
