/**
 * Stored JSON that mentions an erased memory (stream events, job payloads) keeps its shape but
 * loses the memory: any object naming one of `ids` (as `uuid` or `memory_id`) becomes just that id
 * and `erased: true`, and any string equal to an erased text becomes `[erased]`.
 */
export function redactJson(value: unknown, ids: ReadonlySet<string>, texts: ReadonlySet<string>): unknown {
  if (typeof value === 'string') return texts.has(value) ? '[erased]' : value;
  if (Array.isArray(value)) return value.map((v) => redactJson(v, ids, texts));
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  for (const key of ['uuid', 'memory_id'] as const) {
    const id = record[key];
    if (typeof id === 'string' && ids.has(id)) return { [key]: id, erased: true };
  }
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, redactJson(v, ids, texts)]));
}
