/**
 * Webhook hosts EventBridge cannot reach, at the edges of their ranges and names, that hand mutation found no test
 * watching (see each test's mutant).
 */
import { describe, expect, it } from "vitest";
import { unreachableHost } from "../../infra/webhook-host.js";

describe("webhook host: hand mutation found unwatched", () => {
  // Mutants: 127/8 narrowed to 127.0.0/24, and 224/4 to 224/8, let through a loopback address past 127.0.0.x and the
  // multicast ones past 224.x (239.255.255.250 is SSDP's): every delivery would fail into the dead-letter queue.
  it.each([
    ["https://127.255.255.254/hooks", '"127.255.255.254" is a loopback, private or link-local address'],
    ["https://239.255.255.250/hooks", '"239.255.255.250" is a multicast, reserved or broadcast address'],
  ])("refuses %s, at the far end of its range", (url, why) => {
    expect(unreachableHost(url)).toBe(why);
  });

  // Mutant: 172.16/12 widened to /11 (172.0/11) refused public addresses just below the private range.
  it("takes a public address just below 172.16/12", () => {
    expect(unreachableHost("https://172.15.255.254/hooks")).toBeUndefined();
  });

  // Mutants: comparing the host as parsed, trailing dot kept, with "localhost" let the fully qualified "localhost."
  // through; naming the host without its dot named another host than the URL's.
  it("refuses localhost written fully qualified, with its trailing dot, naming it as written", () => {
    expect(unreachableHost("https://localhost./hooks")).toBe('"localhost." is a loopback name');
  });
});
