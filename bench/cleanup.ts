/**
 * Everything the bench starts registers how to undo it here, and the undo runs on success, on error and
 * on Ctrl-C alike: processes are stopped, databases dropped, temporary files removed. Undone in reverse, so
 * a database is dropped only after the processes that use it have stopped.
 */
export class Cleanup {
  readonly #steps: Array<{ name: string; undo: () => Promise<void> | void }> = [];
  #running: Promise<void> | null = null;
  /** Set by Ctrl-C or SIGTERM: the bench starts nothing more and prints no report of a cut-short run. */
  interrupted = false;

  /** Registers an undo; the returned function drops it, for a resource released in the normal course. */
  add(name: string, undo: () => Promise<void> | void): () => void {
    const step = { name, undo };
    this.#steps.push(step);
    return () => {
      const at = this.#steps.indexOf(step);
      if (at >= 0) this.#steps.splice(at, 1);
    };
  }

  /** Runs every registered undo once, newest first; one that fails is reported and the rest still run. */
  run(): Promise<void> {
    this.#running ??= (async () => {
      while (this.#steps.length > 0) {
        const step = this.#steps.pop()!;
        try {
          await step.undo();
        } catch (error) {
          console.error(`cleanup: ${step.name} failed: ${(error as Error).message}`);
        }
      }
      this.#running = null;
    })();
    return this.#running;
  }

  /**
   * Ctrl-C and SIGTERM clean up, then exit 130/143; so does an error nothing caught. The terminal sends
   * SIGINT to the children too, so some may already be gone; a second Ctrl-C gives up waiting.
   */
  onSignals(): void {
    for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
      process.on(event, (error: unknown) => {
        console.error(`\n${event}: ${(error as Error)?.stack ?? String(error)}\ncleaning up…`);
        void this.run().finally(() => process.exit(1));
      });
    }
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => {
        if (this.interrupted) {
          console.error('\ninterrupted again: exiting without waiting for cleanup');
          process.exit(1);
        }
        this.interrupted = true;
        console.error(`\n${signal}: stopping processes and dropping databases…`);
        void this.run().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
      });
    }
  }
}
