/** What a synchronous call threw, for tests that read an error's fields rather than match its message alone. */

/**
 * The error `fn` threw; the test fails when `fn` returns instead. Given `type`, an error of another class is thrown on
 * unchanged, so the test reports the error that came rather than a failed cast.
 *
 * @example
 * thrown(() => parseTenantConfig({}), TenantConfigError).message; // typed as TenantConfigError
 */
export function thrown(fn: () => unknown): Error;
export function thrown<E extends Error>(fn: () => unknown, type: abstract new (...args: never[]) => E): E;
export function thrown(fn: () => unknown, type?: abstract new (...args: never[]) => Error): Error {
  try {
    fn();
  } catch (error) {
    if (type !== undefined && !(error instanceof type)) throw error;
    return error as Error;
  }
  throw new Error(`expected a throw${type === undefined ? "" : ` of ${type.name}`}, but the call returned`);
}
