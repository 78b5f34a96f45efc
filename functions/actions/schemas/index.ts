/** The actions family's shapes: submitting and following actions, approvals and settings, explain and dashboard. */

export * from './actions';
export * from './approvals';
export * from './insights';
