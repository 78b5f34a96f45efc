/**
 * A local stand-in for DNS, for the webhook address rule: tests never depend on the network.
 * Names under example.com/.org/.net resolve to a public documentation address unless a test maps
 * them elsewhere with `setRecord`; `localhost` is loopback; anything else does not resolve.
 */
const PUBLIC = '93.184.216.34';
const records = new Map<string, string[]>([
  ['localhost', ['127.0.0.1', '::1']],
  ['private.example.net', ['10.0.0.5']],
  ['metadata.example.net', ['169.254.169.254']],
  ['split.example.net', [PUBLIC, '192.168.1.20']],
]);

export function setRecord(name: string, addresses: string[]): void {
  records.set(name.toLowerCase(), addresses);
}

export async function testResolveHost(hostname: string): Promise<string[]> {
  const name = hostname.toLowerCase();
  const known = records.get(name);
  if (known) return known;
  if (/(^|\.)example\.(com|org|net)$/.test(name)) return [PUBLIC];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
}
