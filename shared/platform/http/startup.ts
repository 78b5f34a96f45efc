import type { Config } from '../contract/config';
import type { Logger } from '../data/log';

/**
 * Settings that are valid but leave something off that an operator should know about. Both entry
 * points log these once at start-up (Node when it starts, a Worker when it first reads its bindings).
 */
export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (!config.SHARE_BASE_URL && !config.PUBLIC_URL) {
    warnings.push(
      'SHARE_BASE_URL and PUBLIC_URL are not set: share invitation mails carry the token but no join link (links are never built from the request Host)',
    );
  }
  if (config.WEBHOOKS_ALLOW_INSECURE) {
    warnings.push(
      'WEBHOOKS_ALLOW_INSECURE=1: webhooks may call http:// URLs and loopback, private and metadata addresses; for local development only, never in production',
    );
  }
  return warnings;
}

export function logConfigWarnings(config: Config, log: Logger): void {
  for (const warning of configWarnings(config)) log.warn(`configuration: ${warning}`);
}
