import ipaddr from 'ipaddr.js';

/**
 * The outbound address rule for URLs a tenant gives us (webhooks): HTTPS only, and never an
 * address of our own network. A host must resolve only to public unicast addresses, so loopback,
 * private, link-local (169.254.169.254, the cloud metadata service), carrier-grade NAT (another
 * metadata range), unique-local, multicast and reserved ranges are refused, also inside an IPv6
 * address that carries an IPv4 one (compatible, mapped, NAT64, 6to4, Teredo). Checked when the URL
 * is registered and again before every delivery, since DNS can change. `allowInsecure` (WEBHOOKS_ALLOW_INSECURE=1, development only)
 * lifts both rules.
 */
export interface DestinationRule {
  allowInsecure: boolean;
  resolveHost(hostname: string): Promise<string[]>;
}

/**
 * The IPv4 addresses an IPv6 address carries inside it, which a network on the way may reach for
 * it: IPv4-compatible (::a.b.c.d, as WHATWG URL writes it: ::7f00:1), IPv4-mapped (::ffff:a.b.c.d),
 * IPv4-translated (::ffff:0:a.b.c.d), NAT64's well-known prefix (64:ff9b::a.b.c.d), 6to4
 * (2002:aabb:ccdd::) and Teredo (server, and the client stored inverted).
 */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4[] {
  const b = addr.toByteArray();
  const at = (offset: number, invert = false) => new ipaddr.IPv4(b.slice(offset, offset + 4).map((x) => (invert ? ~x & 0xff : x)));
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && ((b[10] === 0xff && b[11] === 0xff) || (b[10] === 0 && b[11] === 0))) return [at(12)];
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return [at(12)];
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return [at(12)];
  if (b[0] === 0x20 && b[1] === 0x02) return [at(2)];
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) return [at(4), at(12, true)];
  return [];
}

/** The range of an IP literal that may not be called, or null when it is public unicast. */
export function blockedRange(ip: string): string | null {
  if (!ipaddr.isValid(ip)) return 'invalid';
  const addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv4') return rangeOrNull(addr.range());
  const v6 = addr as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'loopback' || range === 'unspecified') return range;
  const embedded = embeddedIPv4(v6);
  for (const v4 of embedded) {
    const inner = v4.range();
    if (inner !== 'unicast') return inner;
  }
  // An IPv4 address written in IPv6 (compatible, mapped, translated) is as good as that address;
  // other forms that carry one (NAT64, 6to4, Teredo) stay refused as the special ranges they are.
  if (embedded.length && (range === 'unicast' || range === 'ipv4Mapped' || range === 'rfc6145')) return null;
  return rangeOrNull(range);
}

const rangeOrNull = (range: string) => (range === 'unicast' ? null : range);

/**
 * The rule's verdict on `url`: why it may not be called, or the addresses it was allowed for. A
 * caller that connects should connect to those addresses, not resolve the name again: a name whose
 * DNS answers differently on the next lookup (rebinding) would otherwise reach what was refused.
 * `addresses` is null when nothing was resolved (an IP literal, or `allowInsecure`).
 */
export type Destination = { problem: string } | { problem: null; addresses: string[] | null };

export async function checkDestination(url: string, rule: DestinationRule): Promise<Destination> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { problem: 'is not a valid URL' };
  }
  if (parsed.protocol !== 'https:' && !(rule.allowInsecure && parsed.protocol === 'http:')) return { problem: 'must use https://' };
  if (parsed.username || parsed.password) return { problem: 'must not carry credentials' };
  if (rule.allowInsecure) return { problem: null, addresses: null };
  // WHATWG URL parsing already normalized 0x7f.1 and friends to dotted IPv4; IPv6 keeps brackets.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (ipaddr.isValid(host)) {
    const range = blockedRange(host);
    return range ? { problem: `points at a ${range} address, which webhooks may not call` } : { problem: null, addresses: null };
  }
  let addresses: string[];
  try {
    addresses = await rule.resolveHost(host);
  } catch {
    return { problem: `host ${host} does not resolve` };
  }
  if (!addresses.length) return { problem: `host ${host} does not resolve` };
  for (const address of addresses) {
    const range = blockedRange(address);
    if (range) return { problem: `host ${host} resolves to a ${range} address, which webhooks may not call` };
  }
  return { problem: null, addresses };
}

/** Why a delivery to `url` is not allowed, or null when it is. */
export async function destinationProblem(url: string, rule: DestinationRule): Promise<string | null> {
  return (await checkDestination(url, rule)).problem;
}

/** Workers have no resolver API: ask a DNS-over-HTTPS service for A and AAAA records. */
export function dohResolver(endpoint: string, fetcher: typeof fetch = fetch) {
  return async (hostname: string): Promise<string[]> => {
    const lookups = await Promise.all(
      ['A', 'AAAA'].map(async (type) => {
        const url = `${endpoint}?name=${encodeURIComponent(hostname)}&type=${type}`;
        const res = await fetcher(url, { headers: { accept: 'application/dns-json' }, signal: AbortSignal.timeout(5_000) });
        if (!res.ok) throw new Error(`DNS over HTTPS answered ${res.status}`);
        const body = (await res.json()) as { Answer?: { type: number; data: string }[] };
        return (body.Answer ?? []).filter((a) => a.type === 1 || a.type === 28).map((a) => a.data);
      }),
    );
    return lookups.flat();
  };
}
