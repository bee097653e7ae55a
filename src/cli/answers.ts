import type { AlertsAnswer, AlertTestAnswer } from '../api/alerts.ts';
import type { DeliveriesAnswer, DeliveryAnswer } from '../api/deliveries.ts';
import type { DestinationsAnswer } from '../api/destinations.ts';
import type { RejectionsAnswer } from '../api/rejections.ts';
import type { TaskAnswer, TasksAnswer } from '../api/tasks.ts';
import type { ReloadOutcome } from '../config/reload.ts';
import type { BulkOutcome } from '../operate/bulk.ts';
import type { InstancesAnswer } from '../operate/instances.ts';
import type { TryAnswer } from '../operate/try-config.ts';
import type { Stats } from '../store/queries/stats.ts';

/**
 * The admin API's answers as the CLI reads them: the types the routes build, as JSON carries them. Types only, so
 * an admin command still loads none of the gateway's code (main.ts).
 */

/** A value as it arrives in JSON: a Date as its ISO string (its toJSON), everything else as it was. */
export type Json<T> = T extends Date ? string : T extends readonly (infer U)[] ? Json<U>[] : T extends object ? { [K in keyof T]: Json<T[K]> } : T;

/** What arrived and what it made. */
export type Deliveries = Json<DeliveriesAnswer>;
export type Delivery = Json<DeliveryAnswer>;
export type Rejections = Json<RejectionsAnswer>;
export type StatsAnswer = Json<Stats>;

/** Tasks, and the decisions people take on them. */
export type Tasks = Json<TasksAnswer>;
export type Task = Json<TaskAnswer>;
export type Bulk = Json<BulkOutcome>;

/** Where tasks go, and who hears of them. */
export type Destinations = Json<DestinationsAnswer>;
export type Alerts = Json<AlertsAnswer>;
export type AlertTest = Json<AlertTestAnswer>;

/** The config: the instances that run it, a reload, a try. */
export type Instances = Json<InstancesAnswer>;
export type Reloaded = Extract<ReloadOutcome, { reloaded: true }>;
export type Tried = Json<TryAnswer>;
/** A config refused (422, a reload's or a try's): the API's error, with every problem. */
export type ConfigRefused = { error: { code: string; message: string }; problems: string[]; configVersion: string };
