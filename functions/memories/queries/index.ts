/**
 * Every statement of the memories family. Each takes the tenant (or a `TenantScope`, which only
 * shared/memory/access.ts can build), so a query that forgets whose memories it reads does not
 * compile.
 */

export { COLUMNS, type MemoryDto, type MemoryRow, toMemoryDto, vectorLiteral } from '../../../shared/memory/rows';
export * from './read';
export * from './store';
export * from './tail';
export * from './change';
export * from './search';
export * from './lexeme-stats';
export * from './recall';
export * from './texts';
export * from './as-of';
export * from './governance';
