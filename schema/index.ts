export * from './accounts';
export * from './platform';
export * from './memories';
export * from './traces';
export * from './compensations';
