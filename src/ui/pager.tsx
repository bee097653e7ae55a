/**
 * The links between pages of a list read by cursor. `paged` keeps the filter, the page size and the direction: only
 * the cursor changes.
 */
export function Pager({ path, paged, at, next }: { path: string; paged: Record<string, string>; at: string | undefined; next: string | null }) {
  const asc = paged.order === 'asc';
  return (
    <div class="pager">
      {at ? <a href={`${path}?${new URLSearchParams(paged)}`}>{asc ? 'Oldest' : 'Newest'}</a> : null}
      {next ? <a href={`${path}?${new URLSearchParams({ ...paged, cursor: next })}`}>{asc ? 'Newer →' : 'Older →'}</a> : null}
    </div>
  );
}
