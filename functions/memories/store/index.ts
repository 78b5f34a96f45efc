export { storeBatch, storeMemory } from './store';
