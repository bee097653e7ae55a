import { z } from 'zod';
import { taskKeyProblems } from '../shape/task-key.ts';

/** A template of the task key's placeholders that names at least one: a constant would put every task in one key. */
const template = (what: string) =>
  z
    .string()
    .min(1)
    .superRefine((value, ctx) => {
      for (const problem of taskKeyProblems(value)) ctx.addIssue({ code: 'custom', message: problem.replace('every delivery would be one task', what) });
    });

/** An action's `order`: its tasks about one entity go out in their order, or only the newest. */
export const orderSchema = z
  .strictObject({
    key: template('every task would be about one entity').describe('the entity the task is about, e.g. {body:/id}'),
    by: template('every task would stand at one place')
      .optional()
      .describe("each event's position: a number, an ISO-8601 time, else text; e.g. {body:/updated_at}; default: arrival"),
    mode: z
      .enum(['sequence', 'latest'])
      .describe('"sequence": each task waits for the earlier ones of its key; "latest": only the newest is sent, the older ones end superseded'),
  })
  .describe("tasks about one entity never overtake each other ('sequence'), or only the newest goes ('latest')");
