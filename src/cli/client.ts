/** Exit codes of the admin commands: 1 the API refused (400, 404, 409, 422); 2 usage, connection or authentication. */
export const EXIT = { refused: 1, usage: 2 } as const;

/** An error in the API's shape, so a script reads one shape whatever failed. */
export interface ErrorBody {
  error: { code: string; message: string };
}

export class CliError extends Error {
  /**
   * `body`: what `--json` prints. The API's error exactly as it answered it (its `code` is what a script
   * tells errors apart by); for a failure before any answer, `code` names it and `message` is the CLI's.
   */
  readonly body: ErrorBody;

  constructor(message: string, readonly exitCode: number, code: string, answered?: ErrorBody) {
    super(message);
    this.body = answered ?? { error: { code, message } };
  }
}

export interface Connection {
  url: string;
  token: string | undefined;
}

/**
 * Calls the admin API and returns its JSON, read as `Answer` (answers.ts: the type the route builds); every failure
 * becomes a CliError with the API's own message.
 */
export async function call<Answer>(connection: Connection, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Answer> {
  if (!connection.token) throw new CliError('no admin token: set ONCEHOOK_ADMIN_TOKEN or pass --token', EXIT.usage, 'no_token');
  const target = new URL(path, connection.url);
  let response: Response;
  try {
    response = await fetch(target, {
      method,
      headers: { authorization: `Bearer ${connection.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause?.message ?? (error as Error).message;
    throw new CliError(`cannot reach oncehook at ${connection.url}: ${cause} (set ONCEHOOK_URL or pass --url)`, EXIT.usage, 'unreachable');
  }
  const text = await response.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    throw new CliError(`${method} ${target} answered ${response.status} with something other than JSON: is --url oncehook?`, EXIT.usage, 'not_oncehook');
  }
  if (response.ok) return json as Answer;
  // Any JSON at all: a proxy's error page may be JSON of another shape, or a bare string.
  const said = json as { error?: Partial<ErrorBody['error']> } | null;
  const answered: ErrorBody = said?.error?.code
    ? (said as ErrorBody)
    : { error: { code: `http_${response.status}`, message: said?.error?.message ?? `${response.status} ${response.statusText}` } };
  const { code, message } = answered.error;
  if (response.status === 401 || response.status === 403) {
    // oncehook's token_refused and read_only_token say so themselves; any other refusal (a proxy's, say) is told
    // what it means here.
    const words = code === 'token_refused' || code === 'read_only_token' ? message : `${message} (the token was refused)`;
    throw new CliError(words, EXIT.usage, code, answered);
  }
  if ([400, 404, 409, 422].includes(response.status) && code !== 'admin_api_off') throw new CliError(message, EXIT.refused, code, answered);
  throw new CliError(`${response.status}: ${message}`, EXIT.usage, code, answered);
}

/** A query string from the options that are set. */
export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}
