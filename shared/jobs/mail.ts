import { mailOutbox } from '../../schema';
import type { Config } from '../platform/contract/config';
import { newId } from '../platform/contract/ids';
import type { Logger } from '../platform/data/log';
import type { Work } from '../platform/data/unit-of-work';
import type { Job } from './outbox';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** The verification or invitation token the mail carries, so operators and tests can read it. */
  token?: string | null;
}

export const MAIL_TOPIC = 'mail.send';

/**
 * Sends mail as part of the caller's transaction. The default `outbox` transport stores it (the
 * operator API reads it back); other transports go through the job outbox, so a mail exists
 * exactly when the signup that wrote it does, and a provider outage only delays it.
 */
export async function sendMail(work: Work, mail: Mail): Promise<void> {
  const at = work.ctx.now;
  if (work.ctx.services.config.MAIL_TRANSPORT === 'outbox') {
    await work.tx.insert(mailOutbox).values({
      id: newId('mail'),
      toEmail: mail.to,
      subject: mail.subject,
      body: mail.text,
      token: mail.token ?? null,
      createdAt: at,
    });
    return;
  }
  await work.enqueue({ topic: MAIL_TOPIC, payload: { ...mail }, tenantId: null });
}

export function mailJobHandler(config: Config, log: Logger, fetcher: typeof fetch = fetch) {
  return async (job: Job): Promise<void> => {
    const mail = job.payload as unknown as Mail;
    if (config.MAIL_TRANSPORT === 'log') {
      // The operator chose to read mail from the log (development); the body is the point.
      console.log(`[mail] to=${mail.to} subject=${JSON.stringify(mail.subject)}\n${mail.text}`);
      return;
    }
    const res = await fetcher(config.RESEND_API_URL, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${config.RESEND_API_KEY}`,
        'content-type': 'application/json',
        'idempotency-key': job.id,
      },
      body: JSON.stringify({ from: config.MAIL_FROM, to: [mail.to], subject: mail.subject, text: mail.text }),
    });
    if (!res.ok) throw new Error(`mail provider answered ${res.status}`);
    log.info('mail sent', { to_domain: mail.to.split('@')[1], job_id: job.id });
  };
}
