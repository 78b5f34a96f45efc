import actions from './actions';
import admin from './admin';
import audit from './audit';
import compensations from './compensations';
import consoleFamily from './console';
import cortex from './cortex';
import erasures from './erasures';
import evals from './eval';
import events from './events';
import internal from './internal';
import keys from './keys';
import knowledge from './knowledge';
import memories from './memories';
import oauth from './oauth';
import policies from './policies';
import portability from './portability';
import replay from './replay';
import rollback from './rollback';
import runtime from './runtime';
import shares from './shares';
import spaces from './spaces';
import system from './system';
import teams from './teams';
import traces from './traces';
import usage from './usage';
import webhooks from './webhooks';

/**
 * Every endpoint family, in the order their tags appear in /docs. The app mounts their routers,
 * the job registry takes their job topics and the schedule their maintenance tasks from this one
 * list: adding a family is adding a line here.
 */
export const families = [
  system,
  keys,
  memories,
  spaces,
  shares,
  teams,
  webhooks,
  traces,
  audit,
  replay,
  rollback,
  erasures,
  portability,
  compensations,
  knowledge,
  policies,
  actions,
  runtime,
  evals,
  cortex,
  events,
  usage,
  admin,
  internal,
  oauth,
  consoleFamily,
];
