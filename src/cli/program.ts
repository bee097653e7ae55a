import { Command } from 'commander';
// Imported, not read by path: the build emits a copy as dist/package.json, so this path holds in dist/src/cli too.
import packageJson from '../../package.json' with { type: 'json' };
import { EXIT } from './client.ts';

/**
 * The `oncehook` command before its subcommands are added, which inherit what is set here. `exit` ends the run
 * with a code: the process's own exit, or a test's stand-in that runs commands in its own process.
 */
export function oncehookProgram(exit: (code: number) => never = (code) => process.exit(code)): Command {
  return (
    new Command('oncehook')
      .description('Webhook gateway: verify, deduplicate, and forward each business task once in effect')
      .version(packageJson.version)
      // A hint, not the whole help: printed after the error, twenty commands' worth buried the one line that mattered.
      .showHelpAfterError('(add --help to see how the command is used)')
      // Every command alike: a command line the parser refuses exits 2, so a script tells it from a failed run (1).
      .exitOverride((error) => exit(error.exitCode === 0 ? 0 : EXIT.usage))
  );
}
