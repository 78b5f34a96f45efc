import MailChecker from 'mailchecker';

const domains = MailChecker.blacklist();

/**
 * True for throwaway-mail domains and their subdomains, from the `mailchecker` list (kept current
 * upstream; update the package to refresh it).
 */
export function isDisposableEmail(email: string): boolean {
  let domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  while (domain) {
    if (domains.has(domain)) return true;
    const dot = domain.indexOf('.');
    if (dot === -1) return false;
    domain = domain.slice(dot + 1);
  }
  return false;
}
