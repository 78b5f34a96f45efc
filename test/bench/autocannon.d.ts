// autocannon ships no types. test/bench/http.ts imports it by name (so knip sees the dependency)
// and describes the part of its result it reads.
declare module 'autocannon' {
  const autocannon: (opts: Record<string, unknown>) => Promise<unknown>;
  export default autocannon;
}
