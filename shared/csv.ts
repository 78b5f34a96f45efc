/**
 * One CSV field (RFC 4180: quoted when it holds a quote, comma or line break, quotes doubled).
 * Text that a spreadsheet would run as a formula (starting with =, +, -, @, tab or CR) gets a
 * leading apostrophe (the OWASP advice for CSV injection): an agent's observation must not become
 * a formula on the machine of whoever opens the export. Arrays are joined with `;`.
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = Array.isArray(value) ? value.join(';') : String(value);
  const s = typeof value !== 'number' && /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
