/**
 * How a refresh the token endpoint refused is told apart: a rejected grant (the token family is gone, re-authorize)
 * from a refused client (wrong credentials, the family still good), the store read again to tell a rotation elsewhere
 * from a revoked family, and the error that says which to do.
 */
import { BadRequestError, QashioError, ReauthorizationRequiredError, UnauthorizedError, clientMayBeRefused } from "../errors.js";
import type { ClientLogger } from "../http.js";
import { errorLabel } from "../../error-label.js";

/**
 * The {@link ReauthorizationRequiredError} for a refresh of `refreshToken` the token endpoint refused (`error`, a
 * rejected grant): `what` happened, and what to do. A 401 naming no `invalid_grant` may be a refusal of the client
 * credentials instead (spec §4.2 answers both with 401), so its message says to check them first.
 *
 * @example
 * ```ts
 * throw reauthorizationRequired("the provider rejected the refresh token during rotation", error, refreshToken);
 * ```
 */
export function reauthorizationRequired(what: string, error: QashioError, refreshToken: string): ReauthorizationRequiredError {
  const context = { status: error.status, requestId: error.requestId, method: error.method, path: error.path, errors: error.errors };
  const message = clientMayBeRefused(error)
    ? `${what} or the client credentials: it answered 401 without an OAuth error code, which spec §4.2 gives a reused, ` +
      "revoked or expired refresh token and wrong client credentials alike; check client_id and client_secret first " +
      "(authorizing again with wrong ones fails too), else re-authorize the integration"
    : `${what} (reused, revoked or expired): re-authorize the integration`;
  return new ReauthorizationRequiredError(message, context, { cause: error, refusedRefreshToken: refreshToken });
}

/**
 * True when the token endpoint refused the client itself (OAuth code `invalid_client`, RFC 6749 §5.2): the client id
 * or secret is wrong. The grant was not judged, so the refresh token (and its family) is still good.
 *
 * @example
 * ```ts
 * try { await refresh(options, token); } catch (e) { if (isInvalidClient(e)) fixClientCredentials(); else throw e; }
 * ```
 */
export function isInvalidClient(error: unknown): error is QashioError {
  return error instanceof QashioError && error.errors.some((e) => e.code === "invalid_client");
}

/**
 * True when the token endpoint refused the grant itself (401, or 400 with OAuth code `invalid_grant`): the refresh
 * token is spent, revoked or expired. Not for `invalid_client` (see {@link isInvalidClient}): a wrong client secret
 * says nothing about the token family.
 *
 * @example
 * ```ts
 * try { await refresh(options, token); } catch (e) { if (isRejectedGrant(e)) reloadStoreOrReauthorize(); else throw e; }
 * ```
 */
export function isRejectedGrant(error: unknown): error is QashioError {
  if (isInvalidClient(error)) return false;
  if (error instanceof UnauthorizedError) return true;
  return error instanceof BadRequestError && error.errors.some((e) => e.code === "invalid_grant");
}

/**
 * The token store read again (`load`) after the token endpoint refused a refresh (`refusal`, a rejected grant), to
 * tell a rotation by another process from a revoked family. A failed read is rethrown as it is (the family may be
 * alive), after a warning naming the refusal's status and the read error's name (no token), which that error does not
 * name: else the caller's error would name only the store.
 *
 * @example
 * ```ts
 * const reloaded = await reloadAfterRefusal(error, () => store.load(), logger);
 * ```
 */
export async function reloadAfterRefusal<T>(refusal: QashioError, load: () => Promise<T>, logger: Pick<ClientLogger, "warn"> | undefined): Promise<T> {
  try {
    return await load();
  } catch (error) {
    logger?.warn("the provider refused the refresh token, and reading the token store to tell a rotation by another process from a revoked family failed", {
      status: refusal.status,
      reason: errorLabel(error),
    });
    throw error;
  }
}
