import { createRouter } from '../../shared/platform/http/app';
import { defineFamily } from '../../shared/platform/http/family';
import { deleteExpiredSessions } from './session';

/**
 * The console's place in the family list: its maintenance. Its pages are mounted outside the
 * OpenAPI document by `mountConsole` (functions/app.ts), as /mcp is.
 */
export default defineFamily({
  name: 'console',
  router: createRouter(),
  maintenance: { expired_console_sessions: deleteExpiredSessions },
});
