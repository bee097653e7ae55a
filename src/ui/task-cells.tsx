/** What the two task lists (Tasks, Needs attention) show alike in a row. */

import { Id } from './format.tsx';
import { taskHref } from './hrefs.ts';

/** A task's source and action; the source may break the line after its slash in a narrow column. */
export function ActionName({ task }: { task: { source: string; action: string } }) {
  return (
    <div>
      {task.source}/<wbr />
      <strong>{task.action}</strong>
    </div>
  );
}

/** Who took the task, with the whole name in the title where the column cuts it short, or nobody. */
export function Owner({ owner }: { owner: string | null }) {
  return <td>{owner ? <span class="owner" title={owner}>{owner}</span> : <span class="muted">nobody</span>}</td>;
}

/** The task's ID, a link to its page, short enough for a list. */
export function TaskLink({ id }: { id: string }) {
  return (
    <td>
      <Id value={id} href={taskHref(id)} max={18} />
    </td>
  );
}
