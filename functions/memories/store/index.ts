export { batchStorePort, storeBatch, storeMemory } from './store';
