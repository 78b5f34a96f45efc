import { Receiver } from '@upstash/qstash';
import { createRouter } from '../../shared/platform/http/app';
import { defineFamily } from '../../shared/platform/http/family';
import { AppError } from '../../shared/platform/contract/errors';
import { runDueJobs } from '../../shared/jobs/outbox';

export const JOBS_PATH = '/internal/jobs';

/**
 * QStash calls this after a commit wrote outbox jobs (Workers deployments): it runs whatever is
 * due. The outbox rows are the truth, so a repeated delivery only finds less to do, and the cron
 * trigger sweeps anything a lost message left behind. Not part of the public API document.
 */
const router = createRouter();
router.post(JOBS_PATH, async (c) => {
  const services = c.get('services');
  const { QSTASH_CURRENT_SIGNING_KEY: current, QSTASH_NEXT_SIGNING_KEY: next, PUBLIC_URL } = services.config;
  if (!current || !next || !PUBLIC_URL) throw new AppError('NOT_FOUND', `No route for POST ${JOBS_PATH}`);
  const body = await c.req.text();
  const receiver = new Receiver({ currentSigningKey: current, nextSigningKey: next });
  const url = new URL(JOBS_PATH, PUBLIC_URL).toString();
  const valid = await receiver.verify({ signature: c.req.header('upstash-signature') ?? '', body, url }).catch(() => false);
  if (!valid) throw new AppError('UNAUTHORIZED', 'Invalid QStash signature');
  const ran = await runDueJobs(services);
  return c.json({ ran });
});

/** Not in the public API document: QStash's callback on Workers deployments. */
export default defineFamily({ name: 'internal', router });
