import ipaddr from 'ipaddr.js';

/**
 * Why an address may not be called out to, or null when it is a public unicast address.
 *
 * IPv4: everything ipaddr.js classes as special is refused (loopback, private, link-local,
 * CGNAT 100.64/10, multicast, broadcast, reserved 240/4, unspecified 0/8, AS112, AMT …).
 * IPv6: only global unicast (2000::/3) that ipaddr.js does not class as special passes, which
 * refuses loopback, unspecified, link-local, ULA fc00::/7, multicast, IPv4-mapped ::ffff:0:0/96,
 * IPv4-translated (64:ff9b::/96, ::ffff:0:0:0/96), 6to4, Teredo, documentation and the rest —
 * the v4-embedding forms because they reach an IPv4 host this rule never saw.
 * An unparseable string is refused too.
 */
export function blockedAddressReason(address: string): string | null {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.parse(stripBrackets(address));
  } catch {
    return 'not an IP address';
  }
  const range = ip.range();
  if (ip.kind() === 'ipv4') return range === 'unicast' ? null : describe(range);
  if (range !== 'unicast') return describe(range);
  const first = (ip as ipaddr.IPv6).parts[0] ?? 0;
  // 2000::/3 is the only block IANA allocates as global unicast.
  if ((first & 0xe000) !== 0x2000) return 'outside global unicast (2000::/3)';
  return null;
}

/** `[::1]` → `::1` (URL.hostname keeps the brackets of an IPv6 literal). */
export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

const NAMES: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT (100.64.0.0/10)',
  private: 'private',
  reserved: 'reserved',
  uniqueLocal: 'unique local (fc00::/7)',
  ipv4Mapped: 'IPv4-mapped IPv6',
  rfc6145: 'IPv4-translated IPv6',
  rfc6052: 'IPv4/IPv6 translation (64:ff9b::/96)',
  '6to4': '6to4',
  teredo: 'Teredo',
};

function describe(range: string): string {
  return NAMES[range] ?? range;
}
