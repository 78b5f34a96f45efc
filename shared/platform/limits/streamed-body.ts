/**
 * Paths of routes that read their body themselves, as a stream with their own size cap
 * (`keyRoute({ streamedBody: true })`): the app's 1 MiB limit and its whole-body text check would
 * buffer what they must stream, so both skip these paths.
 */
export const streamedBodyPaths = new Set<string>();

/**
 * A turn of the event loop (setImmediate on Node, a zero timeout elsewhere): work on a large body
 * awaits it between slices, so other requests are answered meanwhile.
 */
export const nextMacrotask = () =>
  new Promise<void>((resolve) => ((globalThis as { setImmediate?: (f: () => void) => void }).setImmediate ?? ((f) => setTimeout(f, 0)))(resolve));
