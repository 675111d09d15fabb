/**
 * Checks across tenants and across one tenant's webhooks that hand mutation found no test watching (see each test's mutant).
 */
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { thrown } from "../thrown.js";

const minimal = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } };
const secretArn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf";
// A webhook secret's ARN needs the tenant pinned to an account and region.
const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
const hook = (name: string) => ({ name, url: `https://erp.test/${name}`, eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } });
// Webhooks all on one URL, apart only in their event types.
const to = (name: string, eventTypes: string[]) => ({ ...hook(name), url: "https://erp.test/h", eventTypes });
const refusal = (tenants: unknown[]) => thrown(() => parseTenantsDocument({ tenants }), TenantConfigError).message;

describe("tenant clashes hand mutation found unwatched", () => {
  // Mutant: replace("-", "") dropped only the first dash, which logical ids drop all of.
  it("refuses webhook names equal once every dash is removed, not only the first", () => {
    expect(refusal([{ ...pinned, webhooks: [hook("a-b-c"), hook("abc")] }])).toBe(
      'tenant "acme": field webhooks[1].name: webhooks "a-b-c" and "abc" have the same name once dashes are removed, as in their resources\' logical ids: rename one',
    );
  });

  // Mutant: recording every name, not only the first of each dashless form, named a repeat after the wrong webhook.
  it("names a repeated webhook name as used twice even after a dashless twin of it", () => {
    expect(refusal([{ ...pinned, webhooks: [hook("a-b"), hook("ab"), hook("a-b")] }])).toBe(
      'tenant "acme": field webhooks[1].name: webhooks "a-b" and "ab" have the same name once dashes are removed, as in their resources\' logical ids: rename one; ' +
        'tenant "acme": field webhooks[2].name: "a-b" is used twice',
    );
  });

  // Mutants: a bus's place without its pinned account, or maySameBus not comparing accounts, took two accounts' buses
  // of one name for one bus and refused a source those tenants may well share.
  it("takes one source for tenants importing same-named buses in accounts pinned apart, and refuses it in one account", () => {
    const shared = { region: "eu-west-1", eventBus: { mode: "import", name: "shared" } };
    const acme = { ...minimal, ...shared, account: "111111111111" };
    expect(parseTenantsDocument({ tenants: [acme, { ...minimal, ...shared, id: "globex", account: "222222222222" }] }).map((t) => t.id)).toEqual(["acme", "globex"]);
    expect(refusal([acme, { ...minimal, ...shared, id: "globex", account: "111111111111" }])).toMatch(/^tenant "globex": field eventSource: /);
  });

  // Mutant: only two or more shared event types counted as sent twice, so one shared type went through.
  it("refuses a webhook sending even one event type an earlier one already sends to that URL", () => {
    expect(refusal([{ ...pinned, webhooks: [to("erp", ["card.created", "card.updated"]), to("erp-tx", ["card.created", "transaction.created"])] }])).toBe(
      'tenant "acme": field webhooks[1].url: webhook "erp" already sends card.created to this URL: each would be delivered twice; list each event type in one webhook only',
    );
  });

  // Mutant: the search for an earlier webhook stopped at the first one on the URL with event types apart.
  it("refuses an event type sent twice to a URL even when an earlier webhook on that URL sends other types", () => {
    expect(refusal([{ ...pinned, webhooks: [to("cards", ["card.updated"]), to("erp", ["card.created"]), to("erp-more", ["card.created"])] }])).toBe(
      'tenant "acme": field webhooks[2].url: webhook "erp" already sends card.created to this URL: each would be delivered twice; list each event type in one webhook only',
    );
  });

  // Mutant: only the later tenant's unpinned account or region was taken as possibly any pinned one, so an unpinned
  // tenant listed before a pinned one on a same-named bus was let through.
  it("refuses one source on a same-named bus whichever of the two tenants is the one left unpinned", () => {
    const shared = { eventBus: { mode: "import", name: "shared" } };
    expect(refusal([{ ...minimal, ...shared }, { ...pinned, ...shared, id: "globex" }])).toMatch(
      /^tenant "globex": field eventSource: "qashio\.bridge" is also the source of tenant "acme" on what may be the same event bus/,
    );
  });

  // Mutants: URLs compared lowercased, or without a trailing slash, took two endpoints for one. Only the parse
  // normalises (a host is case-blind); a path is the endpoint's own, as written.
  it("takes URLs apart only in path case or a trailing slash as two endpoints, each free to get one event type", () => {
    const at = (name: string, url: string) => ({ ...hook(name), url });
    const webhooks = [at("erp", "https://erp.test/h"), at("erp-upper", "https://erp.test/H"), at("erp-slash", "https://erp.test/h/")];
    expect(parseTenantsDocument({ tenants: [{ ...pinned, webhooks }] })[0]?.webhooks).toHaveLength(3);
  });
});
