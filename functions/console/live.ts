/**
 * The console's live streams of each session in this process, so that signing out (or a key that
 * lost its standing) ends them at once. Keyed by the process's event bus: on Node one process
 * serves the stream and the sign-out; on Workers (no bus) each request is on its own, and the
 * stream's periodic session check ends it instead.
 */
const streams = new WeakMap<object, Map<string, Set<() => void>>>();

/** Registers `end` for the session `idHash`; the returned function unregisters it. */
export function onSessionEnd(bus: object | null, idHash: string, end: () => void): () => void {
  if (!bus) return () => {};
  let bySession = streams.get(bus);
  if (!bySession) streams.set(bus, (bySession = new Map()));
  let ends = bySession.get(idHash);
  if (!ends) bySession.set(idHash, (ends = new Set()));
  ends.add(end);
  return () => {
    ends.delete(end);
    if (!ends.size && bySession.get(idHash) === ends) bySession.delete(idHash);
  };
}

/** Ends every live stream of the session `idHash` in this process. */
export function endSessionStreams(bus: object | null, idHash: string): void {
  const ends = bus ? streams.get(bus)?.get(idHash) : undefined;
  for (const end of [...(ends ?? [])]) end();
}
