import type { Context } from 'hono';
import type { Child } from 'hono/jsx';
import { raw } from 'hono/html';
import { pausedRoutes } from '../operate/destinations.ts';
import { versionsWords } from '../operate/explain.ts';
import { instancesAnswer } from '../operate/instances.ts';
import { attentionSummary } from '../store/queries/stats.ts';
import type { UiDeps, UiEnv } from './env.ts';
import { takeFlash, type Flash } from './flash.ts';

export type Section = 'home' | 'attention' | 'tasks' | 'deliveries' | 'rejections' | 'stats' | 'destinations' | 'alerts' | 'config';

const NAV: [Section, string, string][] = [
  ['home', 'Home', '/ui/home'],
  ['attention', 'Needs attention', '/ui/attention'],
  ['tasks', 'Tasks', '/ui/tasks'],
  ['deliveries', 'Deliveries', '/ui/deliveries'],
  ['rejections', 'Refused', '/ui/rejections'],
  ['stats', 'Stats', '/ui/stats'],
  ['destinations', 'Destinations', '/ui/destinations'],
  ['alerts', 'Alerts', '/ui/alerts'],
  ['config', 'Config', '/ui/config'],
];

/** The page shell: head, header with navigation, the flash message, and the page. */
export function Shell(props: { title: string; children: Child; header?: Child; flash?: Flash | null; warning?: string | null }) {
  return (
    <>
      {raw('<!DOCTYPE html>')}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{props.title} · oncehook</title>
          <link rel="stylesheet" href="/ui/style.css" />
        </head>
        <body>
          {props.header}
          <main>
            {props.warning ? (
              <div class="flash error" role="alert">
                {props.warning}
              </div>
            ) : null}
            {props.flash ? (
              <div class={`flash ${props.flash.kind}`} role={props.flash.kind === 'error' ? 'alert' : 'status'}>
                {props.flash.text}
              </div>
            ) : null}
            {props.children}
          </main>
        </body>
      </html>
    </>
  );
}

function Header({ here, actor, readOnly, csrf, attention }: { here: Section | null; actor: string; readOnly: boolean; csrf: string; attention: number }) {
  return (
    <header class="top">
      <div class="bar">
        <a class="brand" href="/ui/home">
          once<span>hook</span>
        </a>
        <nav>
          {NAV.map(([section, label, href]) => (
            <a href={href} class={section === here ? 'here' : undefined}>
              {label}
              {section === 'attention' && attention > 0 ? <span class="count">{attention}</span> : null}
            </a>
          ))}
        </nav>
        <form class="jump" method="get" action="/ui/go">
          <input name="id" placeholder="go to t_… or d_…" aria-label="Go to a task or delivery ID" />
        </form>
        <div class="who">
          <span>
            signed in as <strong>{actor}</strong>
            {readOnly ? ' (read-only)' : ''}
          </span>
          <form method="post" action="/ui/logout">
            <input type="hidden" name="_csrf" value={csrf} />
            <button type="submit">Log out</button>
          </form>
        </div>
      </div>
    </header>
  );
}

/**
 * Renders a signed-in page: the header knows who is signed in and how many tasks wait for a person, and every page
 * warns while the live instances run different configs.
 */
export async function page(c: Context<UiEnv>, deps: UiDeps, here: Section | null, title: string, body: Child, status: 200 | 404 = 200) {
  const [{ count: attention }, { differ, configVersions }] = await Promise.all([
    attentionSummary(deps.store.db, [...(await pausedRoutes(deps.store, deps.config)).sends.keys()]),
    instancesAnswer(deps.store),
  ]);
  const header = <Header here={here} actor={c.get('actor')} readOnly={c.get('readOnly')} csrf={c.get('csrf')} attention={attention} />;
  return c.html(
    <Shell title={title} header={header} flash={takeFlash(c)} warning={differ ? versionsWords(configVersions) : null}>
      {body}
    </Shell>,
    status,
  );
}

/** A refusal or an error as a page of its own, with the way back. */
export function Problem({ status, message }: { status: number; message: string }) {
  return (
    <Shell title={status === 404 ? 'Not found' : 'Error'}>
      <div class="login">
        <div class="panel pad">
          <h1>{status === 404 ? 'Not found' : status >= 500 ? 'Something went wrong' : 'Cannot do that'}</h1>
          <p>{message}</p>
          <p>
            <a href="/ui/home">← Back to the dashboard</a>
          </p>
        </div>
      </div>
    </Shell>
  );
}

/** The hidden field every form that changes something carries. */
export const Csrf = ({ token }: { token: string }) => <input type="hidden" name="_csrf" value={token} />;
