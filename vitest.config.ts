import { configDefaults, defineConfig } from 'vitest/config';

/**
 * One suite, two engines: everything under test/integration runs once on a real PostgreSQL and once on
 * embedded PGlite, switched by ONCEHOOK_TEST_DB. Unit tests run once; e2e tests start real processes and pick
 * their engine per test.
 */
// The integration files share their worker's modules (`isolate: false`): each file already makes its own
// database, and loading PGlite's WebAssembly afresh for every file was most of the PGlite project's time
// (142 s → 90 s; PostgreSQL's 55 s → 42 s).
// Three files at a time even on two cores: vitest's default of one fewer than the cores ran them one by one, and
// most of a file's time is waiting on processes, timers and the database (391 s → 270–290 s at two files). At two,
// the suite's processes kept 1.2 of the two cores busy (342 CPU-s in a 280 s run); at three, 1.5 (355 in 235 s),
// each file about a quarter slower for the sharing (641 s of tests summed, not 514).
// No sequencer: on a clean clone (no results cache) vitest runs the projects in name order (e2e, pglite, postgres,
// unit) and each project's larger files first, so the short unit files come last and no long file starts late:
// the workers finished within ~1 s of each other.
// Files of the integration suite that are about both engines at once (copy-data: embedded PGlite into PostgreSQL),
// whatever the project's switch says: run once, in the postgres project, not twice alike.
const BOTH_ENGINES_AT_ONCE = ['test/integration/copy-data.test.ts'];
// The projects that make PostgreSQL databases: the run's are dropped together at its end.
const RUN_DATABASES = 'test/support/run-databases.ts';

export default defineConfig({
  test: {
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      // The CLI's tests run the command as a process, as e2e does: from the run's build (~70 runs, 0.7 s less each).
      // Its files share their worker's modules, as the integration files do: each file's imports were a third of
      // the project's time, and no file leaves state behind (fake timers and spies are restored after each test).
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false, globalSetup: ['test/support/build-once.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/integration/**/*.test.ts'],
          isolate: false,
          globalSetup: [RUN_DATABASES],
          env: { ONCEHOOK_TEST_DB: 'postgres' },
        },
      },
      // Real processes and a real browser: slower when the whole suite shares two cores, so a wider margin. Its
      // files share their worker's modules too: they import little of the sources and change no global.
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 90_000,
          isolate: false,
          globalSetup: [RUN_DATABASES, 'test/support/build-once.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'pglite',
          include: ['test/integration/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...BOTH_ENGINES_AT_ONCE],
          isolate: false,
          globalSetup: [RUN_DATABASES],
          env: { ONCEHOOK_TEST_DB: 'pglite' },
        },
      },
    ],
  },
});
