import type { Config } from '../config/schema.ts';
import type { SignInThrottle } from '../http/sign-in-throttle.ts';
import type { AdminTokens } from '../http/tokens.ts';
import type { Logger } from '../log.ts';
import type { Store } from '../store/connect.ts';
import type { Transforms } from '../shape/transforms.ts';
import type { Stats } from '../store/queries/stats.ts';
import type { TaskTally } from '../store/queries/task-tally.ts';

/**
 * What every dashboard handler knows: who is signed in, the CSRF token its forms must carry, and whether the token
 * signed in with can only look (`readOnly`: no form that decides is shown, none is taken).
 */
export type UiEnv = { Variables: { actor: string; csrf: string; readOnly: boolean } };

export interface UiDeps {
  store: Store;
  config: Config;
  tokens: AdminTokens | null;
  logger: Logger;
  /** The process's stats reader (its tallies count what arrived since the last view). */
  stats: () => Promise<Stats>;
  /** The process's task tally, by state with the oldest of each: the one `stats` and `/metrics` read. */
  tasks: () => Promise<TaskTally>;
  throttle: SignInThrottle;
  transforms: Transforms;
}
