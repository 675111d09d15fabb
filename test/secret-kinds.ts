/** Log attribute values that are no plain object but hold a secret-looking member, for the loggers' tests. */

/** A token set as a class instance: JSON writes its own members, the refresh token among them. */
export class HeldTokens {
  readonly expiresAt = 5;
  constructor(readonly refreshToken: string) {}
}

/** A value whose toJSON writes an access token that is no member of its own. */
export class SessionReply {
  readonly #accessToken: string;
  constructor(accessToken: string) {
    this.#accessToken = accessToken;
  }
  toJSON(): { accessToken: string; scope: string } {
    return { accessToken: this.#accessToken, scope: "read" };
  }
}
