/** User invitation result (§4.10). */
import * as z from "zod";

const EmailListSchema = z.looseObject({ end_user: z.array(z.string()).default([]) });

/** `data.summary`: present only when invitations were processed immediately. */
export const InvitationSummarySchema = z.looseObject({
  success_emails: EmailListSchema.nullish(),
  failed_emails: EmailListSchema.nullish(),
  total_processed: z
    .looseObject({ success: z.number().int(), failed: z.number().int(), total: z.number().int() })
    .nullish(),
});
export type InvitationSummary = z.output<typeof InvitationSummarySchema>;

/** `data` of `POST /public/v1/core/user_profiles/invite`; no `summary` means queued. */
export const InvitationResultSchema = z.looseObject({
  message: z.string().nullish(),
  summary: InvitationSummarySchema.nullish(),
});
export type InvitationResult = z.output<typeof InvitationResultSchema>;
