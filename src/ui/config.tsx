import type { Context } from 'hono';
import { ConfigError, parseConfig } from '../config/load.ts';
import { configVersion } from '../config/version.ts';
import { InputError } from '../errors.ts';
import { instancesAnswer } from '../operate/instances.ts';
import { DEFAULT_TRIED, MOST_TRIED, tryConfig, type ActionTried, type TryAnswer } from '../operate/try-config.ts';
import { ReadOnlyNote } from './decide-forms.tsx';
import type { UiDeps, UiEnv } from './env.ts';
import { ago } from './format.tsx';
import { Csrf, page } from './layout.tsx';
import { num, Table } from './table.tsx';
import { TitledPanel } from './titled-panel.tsx';

/** What a try was asked with, to show the form filled in again beside its report. */
interface Asked {
  text: string;
  last: number;
  source: string;
}

type Outcome = { report: TryAnswer } | { problems: string[] } | null;

/**
 * The running config and the instances on the database, and a form to try another config on the deliveries already
 * received: per action, the tasks it would make, not make, or shape otherwise. Trying sends and writes nothing.
 */
export async function configPage(c: Context<UiEnv>, deps: UiDeps, asked: Asked = { text: '', last: DEFAULT_TRIED, source: '' }, outcome: Outcome = null) {
  const { instances } = await instancesAnswer(deps.store);
  const readOnly = c.get('readOnly');
  return page(
    c,
    deps,
    'config',
    'Config',
    <>
      <h1>Config</h1>
      <p>
        This instance runs config version <code>{configVersion(deps.config)}</code>. Change the file, then reload it (<code>oncehook reload</code>,
        or <code>kill -HUP</code>): no restart.
      </p>
      <TitledPanel title="Instances">
        <Table head={['Host', num('PID'), 'Role', 'Config version', 'Up since', 'Last heard']}>
          {instances.map((i) => (
            <tr>
              <td>{i.host}</td>
              <td class="num">{i.pid}</td>
              <td>{i.role}</td>
              <td>
                <code>{i.configVersion}</code>
              </td>
              <td>{ago(new Date(i.startedAt))}</td>
              <td>{ago(new Date(i.seenAt))}</td>
            </tr>
          ))}
        </Table>
      </TitledPanel>
      <TitledPanel title="Try a config first">
        <div class="pad">
          <p class="muted">
            Paste a config: the newest deliveries run through its topics, filters, task keys, transforms and URLs, compared with what the running config
            made of them. Nothing is sent or written. Its <code>{'${NAME}'}</code> values are this gateway's.
          </p>
          {readOnly ? (
            <ReadOnlyNote />
          ) : (
            <form method="post" action="/ui/config/try" class="tried">
              <Csrf token={c.get('csrf')} />
              <textarea name="config" required rows={14} placeholder='{"sources": {…}}' aria-label="the config to try">
                {asked.text}
              </textarea>
              <label>
                newest <input name="last" type="number" min={1} max={MOST_TRIED} value={String(asked.last)} /> deliveries
              </label>
              <label>
                of source <input name="source" value={asked.source} placeholder="any" />
              </label>
              <button type="submit">Try it</button>
            </form>
          )}
        </div>
      </TitledPanel>
      {outcome && 'problems' in outcome ? <Problems problems={outcome.problems} /> : null}
      {outcome && 'report' in outcome ? <Report report={outcome.report} /> : null}
    </>,
  );
}

function Problems({ problems }: { problems: string[] }) {
  return (
    <TitledPanel title={`Not tried: the config has ${problems.length} problem${problems.length === 1 ? '' : 's'}`}>
      <ul class="pad">
        {problems.map((problem) => (
          <li>
            <code>{problem}</code>
          </li>
        ))}
      </ul>
    </TitledPanel>
  );
}

const KINDS = [
  ['made', 'made'],
  ['notMade', 'not made'],
  ['shapedDifferently', 'shaped differently'],
] as const satisfies readonly [keyof ActionTried, string][];

function Report({ report }: { report: TryAnswer }) {
  const examples = report.actions.flatMap((action) => KINDS.flatMap(([kind, words]) => action[kind].examples.map((e) => ({ action, words, e }))));
  return (
    <TitledPanel title={`Tried on ${report.tried} deliveries${report.notRetained > 0 ? ` (${report.notRetained} more no longer kept)` : ''}`}>
      <Table head={['Action', num('The same'), num('Made'), num('Not made'), num('Shaped differently')]}>
        {report.actions.map((action) => (
          <tr>
            <td>
              {action.source}/{action.action}
            </td>
            <td class="num">{action.same}</td>
            {KINDS.map(([kind]) => (
              <td class="num">{action[kind].count}</td>
            ))}
          </tr>
        ))}
      </Table>
      {examples.length > 0 ? (
        <Table head={['Action', 'What', 'Delivery', 'Task', 'Why']}>
          {examples.map(({ action, words, e }) => (
            <tr>
              <td>
                {action.source}/{action.action}
              </td>
              <td>{words}</td>
              <td>
                <a href={`/ui/deliveries/${e.receipt}`}>{e.receipt}</a>
              </td>
              <td>
                <code>{e.task}</code>
              </td>
              <td>{e.detail}</td>
            </tr>
          ))}
        </Table>
      ) : null}
    </TitledPanel>
  );
}

/** The form's try: the report, or every problem of the config, on the page again with the form as it was sent. */
export async function tryFromForm(c: Context<UiEnv>, deps: UiDeps) {
  const form = await c.req.parseBody();
  const text = typeof form.config === 'string' ? form.config : '';
  const last = Number(typeof form.last === 'string' && form.last !== '' ? form.last : DEFAULT_TRIED);
  if (!Number.isInteger(last) || last < 1 || last > MOST_TRIED) throw new InputError('invalid_form', `last: a whole number of deliveries from 1 to ${MOST_TRIED}`);
  const source = typeof form.source === 'string' ? form.source.trim() : '';
  const asked = { text, last, source };
  try {
    const tried = parseConfig(text, 'the tried config').config;
    return configPage(c, deps, asked, { report: await tryConfig(deps.store.db, deps.config, tried, { last, source: source || undefined }) });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return configPage(c, deps, asked, { problems: error.problems });
  }
}
