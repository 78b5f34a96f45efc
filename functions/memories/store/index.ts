export type { StoreOutcome, StoreResult } from './prepare';
export { storeBatch, storeMemories, storeMemory } from './store';
