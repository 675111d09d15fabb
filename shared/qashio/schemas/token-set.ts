/** OAuth token set (§2.8) and validate response (§4.2). */
import * as z from "zod";
import { optNumber } from "./primitives.js";

/** Response of `POST /oauth2/token` (no standard envelope). */
export const TokenSetSchema = z.looseObject({
  access_token: z.string().min(1),
  // Spec: always `Bearer`; compared case-insensitively as OAuth 2.0 requires.
  token_type: z.string().regex(/^bearer$/i, "must be Bearer"),
  refresh_token: z.string().min(1),
  scope: z.string().nullish(),
  // Not in the spec; read when present (lifetime "not shown").
  expires_in: optNumber(),
});
export type TokenSet = z.output<typeof TokenSetSchema>;

/** Response of `GET /oauth2/validate`. */
export const ValidateResponseSchema = z.looseObject({ active: z.boolean() });
export type ValidateResponse = z.output<typeof ValidateResponseSchema>;
