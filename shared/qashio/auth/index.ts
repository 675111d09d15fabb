/** OAuth operations, token providers and the token store interface. */
export {
  AUTHORIZE_PATH,
  TOKEN_PATH,
  VALIDATE_PATH,
  buildAuthorizeUrl,
  createState,
  exchangeCode,
  refresh,
  stateMatches,
  validate,
  type AuthorizeUrlParams,
  type OAuthClientOptions,
} from "./oauth.js";
export {
  DEFAULT_LOCK_NAME,
  DEFAULT_LOCK_POLL_MS,
  DEFAULT_LOCK_TTL_MS,
  DEFAULT_LOCK_WAIT_MS,
  DEFAULT_REFRESH_SKEW_MS,
  OAuthTokenProvider,
  StaticTokenProvider,
  isInvalidClient,
  isRejectedGrant,
  storedTokensOf,
  type OAuthTokenProviderOptions,
  type RefreshLock,
  type RefreshLockHandle,
  type TokenEvent,
  type TokenProvider,
  type TokenRequestOptions,
} from "./token-provider.js";
export { jwtExpiry } from "./jwt.js";
export type { StoredTokens, TokenStore } from "./token-store.js";
