import { z } from 'zod';
import { urlTemplateProblems } from '../shape/url-template.ts';

/** A url's placeholders, each told as a problem of the field. */
export const asTemplate = (template: string, ctx: z.RefinementCtx) => {
  for (const problem of urlTemplateProblems(template)) ctx.addIssue({ code: 'custom', message: problem });
};

/**
 * A lookup's URL: a template naming the task (`{key}`) or the delivery's own record (`{body:/id}`). One with no
 * placeholder asks the same question of every task, and the first effect found would settle them all.
 */
export const lookupUrl = z
  .string()
  .superRefine(asTemplate)
  .refine((template) => /\{[^{}]*\}/.test(template), { message: 'a lookup URL needs a placeholder: {key}, the task ID, or a field like {body:/id}' });
