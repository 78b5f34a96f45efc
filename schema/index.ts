export * from './accounts';
export * from './platform';
export * from './memories';
