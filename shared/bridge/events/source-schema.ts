/** The event source's rules (source.ts) as a zod schema, for the tenants file and the functions' configuration. */
import * as z from "zod";
import { EVENT_SOURCE_RULES } from "./source.js";

/**
 * @example
 * eventSourceSchema.parse("acme.qashio.bridge"); // "acme.qashio.bridge"
 */
export const eventSourceSchema = EVENT_SOURCE_RULES.reduce((schema, rule) => schema.regex(rule.pattern, rule.problem), z.string());
