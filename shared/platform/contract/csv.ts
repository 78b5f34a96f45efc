/**
 * Text a spreadsheet would run as a formula: a leading tab, CR or LF, or =, +, - or @ (also their
 * full-width forms ＝＋－＠, which spreadsheets normalize) after any leading spaces and control
 * characters, since spreadsheets skip those before looking for a formula.
 */
const FORMULA = /^(?:[\t\r\n]|[\s\p{Cc}\p{Cf}]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/u;

/**
 * One CSV field (RFC 4180: quoted when it holds a quote, comma or line break, quotes doubled).
 * Text that a spreadsheet would run as a formula (see FORMULA) gets a leading apostrophe (the
 * OWASP advice for CSV injection): an agent's observation must not become a formula on the
 * machine of whoever opens the export. Arrays are joined with `;`.
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = Array.isArray(value) ? value.join(';') : String(value);
  const s = typeof value !== 'number' && FORMULA.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
