/**
 * What a state directory belongs to. Its tokens were issued by one provider to one client, and its snapshots record
 * what one tenant has published: sending those tokens to another provider would leak them, and another tenant's
 * snapshots would hide its changes. So a directory is bound on first use and checked on every later one.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { makeDirDurable, writeFileAtomic } from "./atomic.js";
import { CorruptStateError, LocalStateError } from "./errors.js";
import { STATE_DIRS, STATE_FILES } from "./layout.js";

/** The owner of a state directory; `tenant` is absent where the caller does not know it (authorize). */
export interface StateBinding {
  readonly baseUrl: string;
  readonly clientId: string;
  readonly tenant?: string;
}

/**
 * The state directory belongs to another provider, client or tenant. The message names the fields; `recorded` and
 * `given` hold both bindings, for a caller that shows them (none of them is a secret).
 */
export class StateBindingMismatchError extends LocalStateError {
  override name = "StateBindingMismatchError";
  readonly fields: readonly (keyof StateBinding)[];
  readonly recorded: StateBinding;
  readonly given: Partial<StateBinding>;

  constructor(file: string, fields: readonly (keyof StateBinding)[], bindings: { recorded: StateBinding; given: Partial<StateBinding> }, options?: ErrorOptions) {
    super(`state directory belongs to another ${fields.join(", ")} (recorded in ${file})`, { file }, options);
    this.fields = fields;
    this.recorded = bindings.recorded;
    this.given = bindings.given;
  }
}

/**
 * The state directory holds tokens or snapshots but no binding file (deleted, lost in a partial restore, or written by
 * a version before bindings): whose they are cannot be told, so they are not handed to whoever comes next.
 */
export class StateBindingMissingError extends LocalStateError {
  override name = "StateBindingMissingError";

  constructor(file: string, options?: ErrorOptions) {
    super("state directory holds tokens or snapshots but no binding file", { file }, options);
  }
}

/** How far a caller may move a directory that already holds state. */
export interface BindOptions {
  /**
   * Let a new client id take the directory over (authorize: it replaces the tokens through a fresh sign-in and sends
   * none of the old ones). The provider and tenant still have to match.
   */
  readonly rebindClient?: boolean;
  /** Only check: write nothing (authorize checks before the sign-in and records the binding once it is stored). */
  readonly checkOnly?: boolean;
  /**
   * Leave another owner's binding of a directory without state as it is, writing nothing (a bridge opening, outside
   * the cycle lease): that owner's first cycle may be under way, about to store its first token or snapshot, which
   * would then sit under this binding. The bind under the lease, where no cycle of another runs, takes such a directory.
   */
  readonly keepOther?: boolean;
}

/**
 * Checks `binding` against the one recorded in `<dir>/binding.json`, recording it on first use (and a tenant not
 * yet recorded). The binding guards state: while the directory holds no tokens and no snapshots (a first run that
 * failed on a mistyped setting), it simply follows the settings. With `checkOnly`, `binding` may name only some of
 * the owner (conform-pii, which never calls the provider, knows the tenant alone): only those are checked.
 *
 * @throws StateBindingMismatchError when the directory holds state of another provider, client or tenant.
 * @throws StateBindingMissingError when it holds state but no binding file (restore the file to let its owner in).
 * @throws CorruptStateError when the binding file cannot be parsed.
 * @example
 * ```ts
 * await bindStateDir(".state", { baseUrl: "https://api.example.test", clientId: "c-1", tenant: "acme" });
 * ```
 */
export async function bindStateDir(dir: string, binding: StateBinding, options?: BindOptions): Promise<void>;
export async function bindStateDir(dir: string, binding: Partial<StateBinding>, options: BindOptions & { readonly checkOnly: true }): Promise<void>;
export async function bindStateDir(dir: string, binding: Partial<StateBinding>, options: BindOptions = {}): Promise<void> {
  const file = path.join(dir, STATE_FILES.binding);
  const recorded = readBinding(file);
  let next = binding;
  if (recorded) {
    const fields = (["baseUrl", "clientId", "tenant"] as const).filter(
      (field) => recorded[field] !== undefined && binding[field] !== undefined && recorded[field] !== binding[field],
    );
    if (fields.length === 0) {
      // Same owner; only a tenant learnt now (the directory was first used by authorize) is worth recording.
      if (recorded.tenant !== undefined || binding.tenant === undefined) return;
    } else if (holdsState(dir)) {
      const clientOnly = fields.length === 1 && fields[0] === "clientId";
      if (!(clientOnly && options.rebindClient === true)) throw new StateBindingMismatchError(file, fields, { recorded, given: binding });
    } else if (options.keepOther === true) {
      return;
    }
    next = { ...recorded, ...binding };
  } else if (holdsState(dir)) {
    throw new StateBindingMissingError(file);
  }
  // Only a check may name part of the owner (the overloads): what is written is a whole binding.
  if (options.checkOnly === true) return;
  makeDirDurable(dir);
  await writeFileAtomic(file, `${JSON.stringify(next)}\n`, { mode: 0o600 });
}

/** Whether the directory holds what the binding protects: tokens, or snapshots of what was published. */
function holdsState(dir: string): boolean {
  if (existsSync(path.join(dir, STATE_FILES.tokens))) return true;
  try {
    return readdirSync(path.join(dir, STATE_DIRS.snapshots)).length > 0;
  } catch {
    return false;
  }
}

function readBinding(file: string): StateBinding | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new LocalStateError("state directory binding cannot be read", { file }, { cause: error });
  }
  try {
    const value = JSON.parse(text) as Partial<Record<keyof StateBinding, unknown>>;
    if (typeof value.baseUrl !== "string" || typeof value.clientId !== "string") throw new Error("baseUrl or clientId missing");
    if (value.tenant !== undefined && typeof value.tenant !== "string") throw new Error("tenant is not a string");
    return { baseUrl: value.baseUrl, clientId: value.clientId, ...(value.tenant !== undefined ? { tenant: value.tenant } : {}) };
  } catch (cause) {
    throw new CorruptStateError("state directory binding is not valid JSON of a binding", { file }, { cause });
  }
}
