import type { EventPayload } from '../../shared/jobs/events';

const EXCERPT = 200;
const excerpt = (text: string) => (text.length > EXCERPT ? `${text.slice(0, EXCERPT - 1)}…` : text);

/** One line a person reads in a chat channel: what happened, to what. */
export function summary(event: EventPayload): string {
  const d = event.data as Record<string, unknown>;
  const memory = d.memory as { observation?: string; id?: string } | undefined;
  const what =
    event.type.startsWith('memory.') && memory?.observation !== undefined
      ? `"${excerpt(memory.observation)}"`
      : event.type === 'rollback.completed'
        ? `rolled back to ${d.target}: ${d.removed} removed, ${d.restored} restored, ${d.reverted} reverted`
        : excerpt(JSON.stringify(d));
  return `engram ${event.type}: ${what}`;
}

/**
 * The body a webhook receives: `raw` is the event itself; `slack` and `discord` wrap the summary in
 * the one field their incoming webhooks require (`text`, `content`; Discord caps it at 2000).
 */
export function formatBody(format: 'raw' | 'slack' | 'discord', event: EventPayload): string {
  if (format === 'slack') return JSON.stringify({ text: summary(event) });
  if (format === 'discord') return JSON.stringify({ content: summary(event).slice(0, 2000) });
  return JSON.stringify(event);
}
