import { Option, type Command } from 'commander';
import type { CopyEvent, CopyReport } from '../store/copy/copy-data.ts';
import { EXIT } from './client.ts';
import { foreignScheme, POSTGRES_URL_FORM } from './options.ts';
import { databaseTarget, starting } from './start-failure.ts';

/** Progress on a large table: a line at most this often. */
const PROGRESS_EVERY_MS = 2_000;

const count = (n: number) => n.toLocaleString('en-US');
const perSecond = (rows: number, ms: number) => (ms > 0 ? count(Math.round((rows * 1000) / ms)) : '–');

const rowCount = (n: number) => (n === 0 ? 'no rows' : `${count(n)} row${n === 1 ? '' : 's'}`);

/**
 * Prints copy-data's progress on stderr: each step, a line for each table once copied, and one every few seconds
 * while a large table is on its way.
 */
function progressPrinter(write: (line: string) => void): (event: CopyEvent) => void {
  let tableStarted = 0;
  let lastLine = 0;
  return (event) => {
    const now = performance.now();
    switch (event.kind) {
      case 'step':
        return write(event.message);
      case 'table':
        tableStarted = lastLine = now;
        return;
      case 'rows':
        if (now - lastLine < PROGRESS_EVERY_MS || event.copied === event.total) return;
        lastLine = now;
        return write(`${event.table}: ${count(event.copied)} of ${count(event.total)} rows (${perSecond(event.copied, now - tableStarted)} rows/s)`);
      case 'copied':
        // A rate over a table of a few rows measures the round trips, not the copy.
        return write(`${event.table}: ${rowCount(event.rows)}${event.ms >= 1000 ? ` in ${(event.ms / 1000).toFixed(1)} s (${perSecond(event.rows, event.ms)} rows/s)` : ''}`);
    }
  };
}

/** What was copied, and what the person does next. */
function summary(report: CopyReport, dataDir: string, target: string): string {
  const rows = report.tables.reduce((sum, t) => sum + t.rows, 0);
  const width = Math.max(...report.tables.map((t) => t.name.length));
  return [
    `copied ${report.tables.length} tables, ${count(rows)} rows, into PostgreSQL at ${target} in ${(report.ms / 1000).toFixed(1)} s;`,
    'each table\'s row count and checksum match the data directory\'s:',
    ...report.tables.map((t) => `  ${t.name.padEnd(width)}  ${count(t.rows).padStart(11)}`),
    '',
    'Next:',
    `  1. Start the gateway on PostgreSQL, with the options you use: DATABASE_URL='postgres://…@${target}' npm start`,
    '     (or oncehook serve). Deliveries seen before are still duplicates there; pending tasks are forwarded from there.',
    `  2. Do not start a gateway on ${dataDir} again: what it recorded would be missing from PostgreSQL.`,
    '     copy-data changed nothing in it. Keep it until the new gateway has run a while, then remove it.',
  ].join('\n');
}

export function addCopyDataCommand(program: Command, defaultDataDir: string): void {
  program
    .command('copy-data')
    .description('copy the embedded database, its gateway stopped, into an empty PostgreSQL database: the move to PostgreSQL')
    .requiredOption('--to <url>', `the PostgreSQL database to copy into, empty: ${POSTGRES_URL_FORM}`)
    .addOption(new Option('--data-dir <dir>', 'the embedded data directory the gateway used').env('ONCEHOOK_DATA_DIR').default(defaultDataDir))
    .option('--json', 'print what was copied as JSON, for scripts: every table with its rows, checksum and milliseconds')
    .action(async (options: { to: string; dataDir: string; json?: boolean }, command: Command) => {
      // Checked here, not by an argParser, whose message would print the URL and its password.
      const scheme = foreignScheme(options.to);
      if (!/^postgres(ql)?:\/\//i.test(options.to)) {
        command.error(`error: --to takes a PostgreSQL URL${scheme ? `, not a ${scheme}:// one` : ''}: ${POSTGRES_URL_FORM}`, { exitCode: EXIT.usage });
      }
      const { copyData, CopyDataError } = await import('../store/copy/copy-data.ts');
      const progress = progressPrinter((line) => console.error(`copy-data: ${line}`));
      // Stopped by a signal, the copy rolls back and removes its copy of the directory; a second signal exits at once.
      const stop = new AbortController();
      const onSignal = () => {
        if (stop.signal.aborted) process.exit(1);
        stop.abort(new CopyDataError('stopped by a signal: nothing was committed, and the target is as it was'));
      };
      process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
      try {
        const copying = () => copyData({ dataDir: options.dataDir, targetUrl: options.to, onEvent: progress, signal: stop.signal });
        const report = await starting(options.to, copying, '--to');
        console.log(options.json ? JSON.stringify(report) : summary(report, options.dataDir, databaseTarget(options.to) ?? 'the --to database'));
      } catch (error) {
        if (!(error instanceof CopyDataError)) throw error;
        if (options.json) console.log(JSON.stringify({ error: { code: 'refused', message: error.message } }));
        console.error(`oncehook: ${error.message}`);
        process.exitCode = 1;
      }
    });
}
