/**
 * Provider base URLs of the CDK app: the named deployments' URLs from the environment or the cdk context, and the one
 * each tenant's stack calls.
 */
import { BASE_URL_ENV_VARS, normaliseBaseUrl, type QashioDeployment } from "../shared/qashio/config.js";
import { TenantConfigError } from "./errors.js";
import type { TenantConfig } from "./tenant-config.js";

/** Base URLs of the named provider deployments. */
export type ProviderUrls = Partial<Record<QashioDeployment, string>>;

/**
 * The cdk context value `qashioUrls`: an object from cdk.json, or its JSON text from `-c qashioUrls=...` (the CLI passes
 * strings). Anything else, an unknown deployment or a URL that is not a string fails synth: ignored, it left the
 * tenants of a deployment on cdk.json's placeholders, or without a URL, with no word on why.
 */
function contextUrls(context: unknown): Readonly<Record<string, unknown>> {
  if (context === undefined || context === null) return {};
  const expected = `cdk context qashioUrls must be a JSON object of base URLs by deployment (${Object.keys(BASE_URL_ENV_VARS).join(", ")})`;
  let value = context;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      throw new TenantConfigError(`${expected}, e.g. -c 'qashioUrls={"sandbox":"https://..."}'; got text that is not JSON`);
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TenantConfigError(`${expected}; got ${Array.isArray(value) ? "an array" : typeof value}`);
  const problems = Object.entries(value).flatMap(([deployment, url]) =>
    !Object.hasOwn(BASE_URL_ENV_VARS, deployment) ? [`${deployment} is no deployment`] : typeof url !== "string" ? [`${deployment} is not a string`] : [],
  );
  if (problems.length > 0) throw new TenantConfigError(`${expected}: ${problems.join("; ")}`);
  return value as Readonly<Record<string, unknown>>;
}

/**
 * Where each URL of a {@link providerUrlsFrom} result came from (the variable, or the cdk context), so a refusal
 * names what the operator set; kept beside the result, whose shape stays a plain record of URLs.
 */
const urlSources = new WeakMap<ProviderUrls, Partial<Record<QashioDeployment, string>>>();

/**
 * Reads the named deployments' base URLs: the environment (`QASHIO_PRODUCTION_URL`, ...) wins over the
 * cdk context value `qashioUrls` (`{ production, eu, sandbox }`), so CI and operators can override cdk.json.
 *
 * @throws TenantConfigError when `qashioUrls` is not such an object (see {@link contextUrls}).
 */
export function providerUrlsFrom(context: unknown, env: Readonly<Record<string, string | undefined>>): ProviderUrls {
  const fromContext = contextUrls(context);
  const urls: ProviderUrls = {};
  const sources: Partial<Record<QashioDeployment, string>> = {};
  for (const [deployment, variable] of Object.entries(BASE_URL_ENV_VARS) as [QashioDeployment, string][]) {
    const fromEnv = env[variable]?.trim();
    const value = fromEnv || (typeof fromContext[deployment] === "string" ? fromContext[deployment] : "");
    if (!value) continue;
    urls[deployment] = value;
    sources[deployment] = fromEnv ? variable : `"${deployment}" in the cdk context qashioUrls`;
  }
  urlSources.set(urls, sources);
  return urls;
}

/**
 * Resolves the provider base URL of a tenant.
 *
 * @throws TenantConfigError when a named deployment has no URL configured.
 * @example
 * ```ts
 * resolveProviderUrl(tenant, { sandbox: "https://sandbox.provider.test" }); // "https://sandbox.provider.test"
 * ```
 */
export function resolveProviderUrl(tenant: TenantConfig, urls: ProviderUrls): string {
  const env = tenant.environment;
  const named = env === "production" || env === "eu" || env === "sandbox";
  const url = named ? urls[env] : env;
  if (!url) {
    const variable = BASE_URL_ENV_VARS[env as QashioDeployment];
    throw new TenantConfigError(
      `tenant "${tenant.id}": field environment: "${env}" needs its base URL; set ${variable}, or "${env}" in the cdk context qashioUrls (cdk.json)`,
      { tenant: tenant.id, field: "environment" },
    );
  }
  const source = named ? (urlSources.get(urls)?.[env] ?? BASE_URL_ENV_VARS[env]) : "environment";
  try {
    // Local mode also takes http:// for a loopback host (a sandbox on this machine), which a Lambda cannot reach.
    if (/^\s*http:/i.test(url)) throw new Error(`${source} must be an https:// URL for an AWS stack (http:// is for a local sandbox only)`);
    return normaliseBaseUrl(url, source);
  } catch (cause) {
    throw new TenantConfigError(
      `tenant "${tenant.id}": field environment: ${(cause as Error).message}`,
      { tenant: tenant.id, field: "environment" },
      { cause },
    );
  }
}
