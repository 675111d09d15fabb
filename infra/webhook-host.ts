/**
 * Webhook hosts EventBridge cannot deliver to. An API destination takes a public domain name, and the stack's
 * connections are public ones (a host in a VPC or on premises would need a private connection through VPC Lattice):
 * AWS EventBridge User Guide, "API destinations as targets" (docs/spec-gaps.md, "Webhook hosts").
 */
import { BlockList, isIPv4 } from "node:net";

/** Builds a list of IPv4 ranges. */
function ranges(...nets: readonly (readonly [string, number])[]): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of nets) list.addSubnet(net, prefix, "ipv4");
  return list;
}

/** IPv4 ranges no public route reaches, each with what to call it. */
const NON_PUBLIC_V4 = [
  // Loopback, private (RFC 1918), shared (RFC 6598), link-local and "this network".
  [
    ranges(["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12], ["192.168.0.0", 16]),
    "a loopback, private or link-local address",
  ],
  // Multicast (224/4) and reserved (240/4, 255.255.255.255 the broadcast among them): no https server answers there.
  [ranges(["224.0.0.0", 4], ["240.0.0.0", 4]), "a multicast, reserved or broadcast address"],
] as const;

/** Suffixes of names that resolve only on a private network (RFC 6762 `.local`, ICANN's `.internal`, RFC 8375 `home.arpa`). */
const PRIVATE_SUFFIXES = ["local", "internal", "home.arpa"] as const;

/**
 * Why EventBridge cannot reach the host of an https URL, or undefined for a host it can. The host is read as a URL
 * parser reads it (lowercase, `2130706433` as `127.0.0.1`). IPv6 literals are refused elsewhere (API destination pattern).
 *
 * @example
 * unreachableHost("https://127.0.0.1/hooks"); // '"127.0.0.1" is a loopback, private or link-local address'
 */
export function unreachableHost(url: string): string | undefined {
  const host = new URL(url).hostname;
  const name = host.replace(/\.$/, "");
  if (isIPv4(name)) {
    const kind = NON_PUBLIC_V4.find(([list]) => list.check(name, "ipv4"))?.[1];
    return kind === undefined ? undefined : `"${host}" is ${kind}`;
  }
  if (name === "localhost" || name.endsWith(".localhost")) return `"${host}" is a loopback name`;
  const suffix = PRIVATE_SUFFIXES.find((s) => name.endsWith(`.${s}`) || name === s);
  return suffix === undefined ? undefined : `"${host}" is a name of a private network (.${suffix})`;
}
