export * from './accounts';
export * from './platform';
export * from './memories';
export * from './traces';
export * from './compensations';
export * from './idempotency';
export * from './change-control';
export * from './teams';
