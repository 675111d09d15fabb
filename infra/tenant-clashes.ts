/**
 * Checks across the tenants of one tenants file, and across one tenant's webhooks, that no single entry's schema can
 * see: ids listed twice, webhook names that collide, event types sent twice to one URL, sources shared on one bus.
 */
import { TenantConfigError } from "./errors.js";
import { createdEventBusName, type TenantConfig } from "./tenant-config.js";
import type { WebhookConfig } from "./webhook-schema.js";

/**
 * The faults between valid tenants, in the order of the tenants (those on a shared bus last).
 *
 * @returns one TenantConfigError per fault, each naming the tenant and field; none when the tenants agree.
 */
export function tenantClashes(tenants: readonly TenantConfig[]): TenantConfigError[] {
  const faults: TenantConfigError[] = [];
  const fault = (tenant: string, field: string, problem: string) =>
    faults.push(new TenantConfigError(`tenant "${tenant}": field ${field}: ${problem}`, { tenant, field }));
  // Each id once: a tenant listed twice is that fault alone, not also a clash of sources with itself.
  const unique = new Map<string, TenantConfig>();
  for (const tenant of tenants) {
    if (unique.has(tenant.id)) {
      fault(tenant.id, "id", "listed more than once");
      continue;
    }
    unique.set(tenant.id, tenant);
    const names = new Map<string, string>();
    tenant.webhooks.forEach((hook, i) => {
      const field = `webhooks[${i}].name`;
      // Dashes are dropped from logical ids, so names equal without them would collide there.
      const key = hook.name.replaceAll("-", "");
      const earlier = names.get(key);
      if (earlier === hook.name) fault(tenant.id, field, `"${hook.name}" is used twice`);
      else if (earlier !== undefined) {
        fault(
          tenant.id,
          field,
          `webhooks "${earlier}" and "${hook.name}" have the same name once dashes are removed, as in their resources' logical ids: rename one`,
        );
      } else names.set(key, hook.name);
    });
    for (const { field, problem } of repeatedDeliveries(tenant.webhooks)) fault(tenant.id, field, problem);
  }
  faults.push(...sourceClashesOnSharedBuses([...unique.values()]));
  return faults;
}

/**
 * Webhooks sending an event type to a URL (as parsed: a host is case-blind) an earlier webhook already sends it to,
 * where each such event would arrive twice. One URL for event types apart is fine; a webhook named as an earlier one
 * is that fault alone.
 */
function repeatedDeliveries(webhooks: readonly WebhookConfig[]): { field: string; problem: string }[] {
  const urls = webhooks.map((hook) => new URL(hook.url).href);
  return webhooks.flatMap((hook, i) => {
    for (const [j, earlier] of webhooks.slice(0, i).entries()) {
      if (earlier.name === hook.name || urls[j] !== urls[i]) continue;
      const shared = hook.eventTypes.filter((type) => earlier.eventTypes.includes(type));
      if (shared.length === 0) continue;
      const problem = `webhook "${earlier.name}" already sends ${shared.join(", ")} to this URL: each would be delivered twice; list each event type in one webhook only`;
      return [{ field: `webhooks[${i}].url`, problem }];
    }
    return [];
  });
}

/** Where a tenant's bus is: its name, and its account and region when pinned (unset: wherever the stack deploys). */
interface BusPlace {
  readonly name: string;
  readonly account?: string;
  readonly region?: string;
}

function busPlaceOf(tenant: TenantConfig): BusPlace {
  const bus = tenant.eventBus;
  if ("arn" in bus) {
    const [, , , region, account, resource] = bus.arn.split(":");
    return { name: (resource ?? "").replace(/^event-bus\//, ""), account, region };
  }
  // Another tenant may import a created bus by its name.
  const name = "name" in bus ? bus.name : createdEventBusName(tenant.id);
  return { name, account: tenant.account, region: tenant.region };
}

/** Whether two places may be one bus: same name, and no pinned account or region that tells them apart. */
function maySameBus(a: BusPlace, b: BusPlace): boolean {
  const agree = (x: string | undefined, y: string | undefined) => x === undefined || y === undefined || x === y;
  return a.name === b.name && agree(a.account, b.account) && agree(a.region, b.region);
}

/**
 * Tenants on one bus must publish under sources of their own: the pollers' PutEvents grant tells tenants apart by
 * source only (IAM cannot see `detail.tenant`, which the rules and archive also match), so with a common one a tenant's
 * function could put events stamped with another tenant's id into that tenant's webhooks and archive
 * (docs/tenants-file.md, "Event sources on a shared bus"). An unpinned account or region is where the shell deploys,
 * so it may be any pinned one.
 *
 * @returns one TenantConfigError per tenant sharing a source with an earlier one, naming both.
 */
function sourceClashesOnSharedBuses(tenants: readonly TenantConfig[]): TenantConfigError[] {
  const places = tenants.map(busPlaceOf);
  return tenants.flatMap((tenant, i) => {
    const other = tenants.find(
      (earlier, j) => j < i && earlier.eventSource === tenant.eventSource && maySameBus(places[i] as BusPlace, places[j] as BusPlace),
    );
    if (other === undefined) return [];
    return [
      new TenantConfigError(
        `tenant "${tenant.id}": field eventSource: "${tenant.eventSource}" is also the source of tenant "${other.id}" on what may be the ` +
          "same event bus: give each tenant on a shared bus a source of its own (or pin account and region where they differ)",
        { tenant: tenant.id, field: "eventSource" },
      ),
    ];
  });
}
