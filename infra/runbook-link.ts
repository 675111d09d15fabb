/**
 * Where alarm descriptions and the dashboard point at the runbook. By default the repository-relative path
 * `docs/runbook.md`; the app context `runbookUrl` (`-c runbookUrl=https://...` or cdk.json) makes the links absolute,
 * so they open from an alarm mail or the console.
 */
import { isSecretName } from "../shared/secret-attributes.js";
import { InfraError } from "./errors.js";

/** The runbook's path in the repository: the link target without `runbookUrl`. */
export const DEFAULT_RUNBOOK_URL = "docs/runbook.md";

/**
 * Longest `runbookUrl` accepted: it is written into every alarm description (at most 1024 characters, the longest of
 * ours about 300 without the link).
 */
export const MAX_RUNBOOK_URL_LENGTH = 512;

const EXAMPLE = "https://git.example/qashio-bridge/blob/main/docs/runbook.md";

/**
 * The runbook address from the context value `runbookUrl`: unset (or empty) gives {@link DEFAULT_RUNBOOK_URL}, a set
 * one must be an absolute `https:` URL of the runbook page without credentials (nor a secret-looking query parameter,
 * such as `private_token`) and without a `#fragment` (the sections' anchors are appended). The value is never echoed:
 * a wrong one may carry a token.
 *
 * @throws InfraError naming the context setting and what is wrong.
 * @example
 * runbookUrlFrom("https://git.example/qashio-bridge/blob/main/docs/runbook.md"); // the same URL
 * runbookUrlFrom(undefined); // "docs/runbook.md"
 */
export function runbookUrlFrom(context: unknown): string {
  if (context === undefined || context === null || (typeof context === "string" && context.trim() === "")) return DEFAULT_RUNBOOK_URL;
  const problem = (what: string) => new InfraError(`context runbookUrl: ${what}, e.g. -c runbookUrl=${EXAMPLE}`);
  if (typeof context !== "string") throw problem("must be a string, the https address of docs/runbook.md");
  const text = context.trim();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw problem("is not an absolute URL: give the https address of docs/runbook.md");
  }
  if (url.protocol !== "https:") throw problem("must be an https:// URL (it is opened from alarm mails)");
  if (url.username !== "" || url.password !== "") {
    throw problem("must not carry credentials (user:password@): it is written into every alarm description and mail");
  }
  // A Git host's raw link may carry its token in the query (GitLab's ?private_token=): the log lines' rule for secret names.
  const secret = [...url.searchParams.keys()].find(isSecretName);
  if (secret !== undefined) {
    throw problem(`must not carry a secret in its query (parameter ${secret}): it is written into every alarm description and mail`);
  }
  // An empty `#` leaves hash empty but stays in href, where `#anchor` would follow it.
  if (url.hash !== "" || url.href.endsWith("#")) throw problem("must not have a #fragment: each link appends its section's anchor");
  if (url.href.length > MAX_RUNBOOK_URL_LENGTH) throw problem(`must be at most ${MAX_RUNBOOK_URL_LENGTH} characters (alarm descriptions hold 1024)`);
  return url.href;
}

/**
 * The link to one section of the runbook.
 *
 * @example
 * runbookLink("docs/runbook.md", "synclag"); // "docs/runbook.md#synclag"
 */
export function runbookLink(runbookUrl: string, anchor: string): string {
  return `${runbookUrl}#${anchor}`;
}
