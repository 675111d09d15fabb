/**
 * OAuth 2.0 of spec §4.2 and §5: authorization codes (single use, ten minutes of
 * sandbox time, exact redirect match), rotating single-use refresh tokens whose reuse
 * revokes the whole family, and HS256 JWT access tokens with `exp`.
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { SandboxClock } from "./clock.js";
import { OAuthError, UnauthorizedError } from "./errors.js";

/** Authorization code life (§5 rule 5). */
export const AUTHORIZATION_CODE_TTL_SECONDS = 600;
/** Access token lifetime (not shown by the spec: chosen, see docs/spec-gaps.md). */
export const ACCESS_TOKEN_TTL_SECONDS = 900;
/** Refresh token lifetime (not shown by the spec: chosen). */
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 86_400;
/** Scopes the sandbox grants (§5 rule 8); absent `scope` means all of them. */
export const SANDBOX_SCOPES = ["wallet:read", "cards:read", "cards:write", "transactions:read", "transactions:write", "users:read"] as const;

/** The pre-registered client. */
export const SANDBOX_CLIENT = { clientId: "sandbox-client", clientSecret: "sandbox-secret" } as const;

interface AuthorizationCode {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope: string;
  readonly companyId: string;
  readonly expiresAtMs: number;
  used: boolean;
}

interface TokenFamily {
  readonly id: string;
  readonly clientId: string;
  readonly companyId: string;
  readonly scope: string;
  revoked: boolean;
}

interface RefreshTokenRecord {
  readonly familyId: string;
  readonly expiresAtMs: number;
  consumed: boolean;
}

/** What a valid access token grants. */
export interface AccessGrant {
  readonly companyId: string;
  readonly clientId: string;
  readonly scopes: ReadonlySet<string>;
  readonly familyId: string;
  readonly expiresAt: number;
}

/** Token set of §2.8, plus `expires_in` (seconds). */
export interface TokenSetBody {
  readonly access_token: string;
  readonly token_type: "Bearer";
  readonly refresh_token: string;
  readonly scope: string;
  readonly expires_in: number;
}

export class OAuthServer {
  private readonly key = randomBytes(32);
  private readonly codes = new Map<string, AuthorizationCode>();
  private readonly families = new Map<string, TokenFamily>();
  private readonly refreshTokens = new Map<string, RefreshTokenRecord>();

  constructor(
    private readonly clock: SandboxClock,
    /** Lifetime of the access tokens issued, seconds. */
    private readonly accessTokenTtlSeconds = ACCESS_TOKEN_TTL_SECONDS,
  ) {}

  /** Authorization codes and refresh tokens held (what the grants cost in memory). */
  get held(): { readonly codes: number; readonly refreshTokens: number } {
    return { codes: this.codes.size, refreshTokens: this.refreshTokens.size };
  }

  /** True for the pre-registered client's loopback redirect URIs (`http://127.0.0.1[:port]/...`, `http://localhost[:port]/...`), without credentials or fragment. */
  isRedirectUriAllowed(redirectUri: string): boolean {
    let url: URL;
    try {
      url = new URL(redirectUri);
    } catch {
      return false;
    }
    // No fragment (RFC 6749 §3.1.2) and no credentials: `hash` and `username` are empty for a bare `#` and for a
    // password alone, so the text and `password` are checked too.
    return (
      url.protocol === "http:" &&
      (url.hostname === "127.0.0.1" || url.hostname === "localhost") &&
      url.username === "" &&
      url.password === "" &&
      !redirectUri.includes("#")
    );
  }

  isClient(clientId: string): boolean {
    return clientId === SANDBOX_CLIENT.clientId;
  }

  /** Normalises a requested scope string; throws `invalid_scope` on an unknown scope. */
  normaliseScope(scope: string | undefined): string {
    if (scope === undefined || scope.trim() === "") return SANDBOX_SCOPES.join(" ");
    const requested = scope.split(/\s+/).filter(Boolean);
    const unknown = requested.filter((s) => !(SANDBOX_SCOPES as readonly string[]).includes(s));
    if (unknown.length > 0) throw new OAuthError(400, "invalid_scope", `unknown scope: ${unknown.join(" ")}`);
    return [...new Set(requested)].join(" ");
  }

  /** Issues an authorization code as if the user approved (same rules as any code). */
  issueCode(params: { clientId: string; redirectUri: string; scope?: string; companyId: string }): string {
    if (!this.isClient(params.clientId)) throw new OAuthError(400, "invalid_client", "unknown client_id");
    if (!this.isRedirectUriAllowed(params.redirectUri)) throw new OAuthError(400, "invalid_request", "redirect_uri is not registered for this client");
    const code = randomBytes(24).toString("base64url");
    forgetExpired(this.codes, this.clock.nowMs());
    this.codes.set(code, {
      clientId: params.clientId,
      redirectUri: params.redirectUri,
      scope: this.normaliseScope(params.scope),
      companyId: params.companyId,
      expiresAtMs: this.clock.nowMs() + AUTHORIZATION_CODE_TTL_SECONDS * 1000,
      used: false,
    });
    return code;
  }

  /** `grant_type=authorization_code`. */
  exchangeCode(params: { clientId: string; clientSecret: string; code: string; redirectUri: string }): TokenSetBody {
    this.authenticateClient(params.clientId, params.clientSecret);
    const record = this.codes.get(params.code);
    if (!record) throw new OAuthError(401, "invalid_grant", "authorization code is invalid");
    if (record.used) throw new OAuthError(401, "invalid_grant", "authorization code was already used");
    if (this.clock.nowMs() >= record.expiresAtMs) throw new OAuthError(401, "invalid_grant", "authorization code has expired");
    if (record.clientId !== params.clientId) throw new OAuthError(400, "invalid_grant", "authorization code was issued to another client");
    if (record.redirectUri !== params.redirectUri) throw new OAuthError(400, "invalid_grant", "redirect_uri does not match the one used to obtain the code");
    record.used = true;
    const family: TokenFamily = { id: randomUUID(), clientId: record.clientId, companyId: record.companyId, scope: record.scope, revoked: false };
    this.families.set(family.id, family);
    return this.issueTokens(family);
  }

  /** `grant_type=refresh_token`: rotation; a consumed token presented again revokes its family. */
  refresh(params: { clientId: string; clientSecret: string; refreshToken: string }): TokenSetBody {
    this.authenticateClient(params.clientId, params.clientSecret);
    const record = this.refreshTokens.get(params.refreshToken);
    if (!record) throw new OAuthError(401, "invalid_grant", "refresh token is invalid");
    const family = this.families.get(record.familyId);
    if (!family || family.clientId !== params.clientId) throw new OAuthError(401, "invalid_grant", "refresh token is invalid");
    if (family.revoked) throw new OAuthError(401, "invalid_grant", "refresh token family was revoked");
    // Expiry before reuse: a spent token past its lifetime may already be forgotten (`forgetExpired`, run by any
    // grant), so revoking on it only while still held would make the outcome depend on other families' traffic.
    if (this.clock.nowMs() >= record.expiresAtMs) throw new OAuthError(401, "invalid_grant", "refresh token has expired");
    if (record.consumed) {
      family.revoked = true;
      throw new OAuthError(401, "invalid_grant", "refresh token was already used; the token family is revoked");
    }
    record.consumed = true;
    return this.issueTokens(family);
  }

  /** Verifies a bearer access token: signature, expiry (sandbox clock), family not revoked. */
  verifyAccessToken(token: string | undefined): AccessGrant {
    if (!token) throw new UnauthorizedError("Missing bearer token");
    const parts = token.split(".");
    if (parts.length !== 3) throw new UnauthorizedError("Malformed access token");
    const [header, payload, signature] = parts as [string, string, string];
    // The signature's text is compared, not its decoded bytes: base64url decoding skips stray characters and
    // padding, so a token with junk in its signature would otherwise pass as the one issued.
    const expected = Buffer.from(this.sign(`${header}.${payload}`).toString("base64url"));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new UnauthorizedError("Invalid access token");
    let claims: Record<string, unknown>;
    try {
      claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<string, unknown>;
    } catch (cause) {
      throw new UnauthorizedError("Malformed access token", { cause });
    }
    const exp = Number(claims.exp);
    if (!Number.isFinite(exp) || this.clock.nowSeconds() >= exp) throw new UnauthorizedError("Access token has expired");
    const family = this.families.get(String(claims.fid));
    if (!family || family.revoked) throw new UnauthorizedError("Access token was revoked");
    return {
      companyId: family.companyId,
      clientId: family.clientId,
      scopes: new Set(String(claims.scope ?? "").split(" ").filter(Boolean)),
      familyId: family.id,
      expiresAt: exp,
    };
  }

  private authenticateClient(clientId: string, clientSecret: string): void {
    const ok = this.isClient(clientId) && safeEqual(clientSecret, SANDBOX_CLIENT.clientSecret);
    if (!ok) throw new OAuthError(401, "invalid_client", "client authentication failed");
  }

  private issueTokens(family: TokenFamily): TokenSetBody {
    const nowSeconds = this.clock.nowSeconds();
    const claims = {
      iss: "qashio-sandbox",
      sub: family.companyId,
      aud: family.clientId,
      company_id: family.companyId,
      scope: family.scope,
      fid: family.id,
      jti: randomUUID(),
      iat: nowSeconds,
      exp: nowSeconds + this.accessTokenTtlSeconds,
    };
    const header = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");
    const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
    const accessToken = `${header}.${payload}.${this.sign(`${header}.${payload}`).toString("base64url")}`;
    const refreshToken = `rt_${randomBytes(32).toString("base64url")}`;
    forgetExpired(this.refreshTokens, this.clock.nowMs());
    this.refreshTokens.set(refreshToken, {
      familyId: family.id,
      expiresAtMs: this.clock.nowMs() + REFRESH_TOKEN_TTL_SECONDS * 1000,
      consumed: false,
    });
    return { access_token: accessToken, token_type: "Bearer", refresh_token: refreshToken, scope: family.scope, expires_in: this.accessTokenTtlSeconds };
  }

  private sign(input: string): Buffer {
    return createHmac("sha256", this.key).update(input).digest();
  }
}

/**
 * Drops the records of `records` that expired by `nowMs`, oldest first, stopping at the first live one: every record
 * lives as long as the others of its kind and sandbox time only moves forward, so insertion order is expiry order, and
 * each record is looked at once when it goes (the demo refreshes every access token lifetime for as long as it is left
 * running). A code or refresh token past its expiry is refused anyway; once forgotten, a spent one presented again is
 * refused as unknown instead of revoking its family.
 */
function forgetExpired(records: Map<string, { readonly expiresAtMs: number }>, nowMs: number): void {
  for (const [key, record] of records) {
    if (record.expiresAtMs > nowMs) return;
    records.delete(key);
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
