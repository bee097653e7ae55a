import { index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Each running gateway process, as it last said it was: its role and the version of the config it runs. Written at
 * start, at each reload and every few seconds after; a process that stops deletes its row, one killed stops saying
 * so and is no longer counted live. Rows silent for a day are deleted by the others, so the table stays small.
 */
export const instances = pgTable(
  'instances',
  {
    id: text('id').primaryKey(),
    host: text('host').notNull(),
    pid: integer('pid').notNull(),
    role: text('role').notNull(),
    configVersion: text('config_version').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
    seenAt: timestamp('seen_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('instances_seen_idx').on(t.seenAt)],
);
