import { fileURLToPath } from 'node:url';

export const SNAPSHOT_PATH = fileURLToPath(new URL('./openapi.snapshot.json', import.meta.url));
export const ERRORS_DOC_PATH = fileURLToPath(new URL('../docs/errors.md', import.meta.url));

/** The document as committed: without `servers`, which names the deployment, not the contract. */
export const snapshotOf = (doc: Record<string, unknown>) => `${JSON.stringify({ ...doc, servers: undefined }, null, 2)}\n`;
