/**
 * Senders that sign the URL they called (Twilio, Square) sign it as their console shows it: the public URL, not
 * the address a proxy hands oncehook. The source's `publicUrl` gives the origin; the path and query are the ones
 * the request named (`InboundRequest.target`), so a URL configured with a query string (`?store=2`) verifies too.
 */
import { SampleError } from './sender.ts';

/**
 * The URLs the sender may have signed: the target as it arrived, and as URL parsing normalizes it (`'` → `%27`
 * in a query) — the first is what the sender sent, the second what a sender that normalizes its URL signs; the
 * `twilio` SDK's validateRequest tries both. Concatenated, never resolved: a target `//host/x` must not become
 * another host.
 */
export function calledUrls(publicUrl: string, target: string | undefined): string[] {
  if (target === undefined) throw new Error('a sender that signs its URL is verified with the request target');
  const { origin } = new URL(publicUrl);
  const asSent = origin + target;
  const normalized = new URL(asSent);
  const asParsed = normalized.origin + normalized.pathname + normalized.search;
  return asParsed === asSent ? [asSent] : [asSent, asParsed];
}

/** The query of the target the sender called, as parameters. */
export function targetQuery(target: string | undefined): URLSearchParams {
  const at = target?.indexOf('?') ?? -1;
  return new URLSearchParams(at < 0 ? '' : target!.slice(at + 1));
}

/**
 * The URL without and with its port (443 or 80 when the URL names none): the `twilio` SDK tries both, because
 * Twilio has signed URLs both ways.
 */
export function withAndWithoutPort(url: string): string[] {
  const parsed = new URL(url);
  const rest = url.slice(parsed.origin.length);
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  return [`${parsed.protocol}//${parsed.hostname}${rest}`, `${parsed.protocol}//${parsed.hostname}:${port}${rest}`];
}

/** The URL a sample is signed over: the source's public origin and the path the sample is posted to. */
export function sampleUrl(sender: string, publicUrl: string | undefined, path: string | undefined): string {
  if (publicUrl === undefined) throw new SampleError(`a ${sender} source signs its publicUrl, and this one has none`);
  if (path === undefined) throw new Error('a sample of a sender that signs its URL needs the path it is posted to');
  return new URL(publicUrl).origin + path;
}
