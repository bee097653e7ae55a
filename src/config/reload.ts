/** What a reload answers: the config now running, or every problem of the one refused (the running one stays). */
export type ReloadOutcome =
  | { reloaded: true; configVersion: string; previousVersion: string }
  | { reloaded: false; configVersion: string; problems: string[] };

/** Re-reads the config and swaps it in; given to the admin API by a gateway that was started from a file. */
export type Reload = () => Promise<ReloadOutcome>;
