/**
 * Paths of routes that read their body themselves, as a stream with their own size cap
 * (`keyRoute({ streamedBody: true })`): the app's 1 MiB limit and its whole-body text check would
 * buffer what they must stream, so both skip these paths.
 */
export const streamedBodyPaths = new Set<string>();
