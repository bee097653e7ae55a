import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { cookieOptions } from './cookies.ts';

/** A one-time message carried across the redirect after a form, in a short-lived cookie of its own. */
export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

const FLASH_COOKIE = 'oncehook_flash';

/** Answers a form: back to `to` (a /ui path) with a message to show there once. */
export function redirectWithFlash(c: Context, to: string, flash: Flash): Response {
  setCookie(c, FLASH_COOKIE, JSON.stringify({ kind: flash.kind, text: flash.text.slice(0, 600) }), cookieOptions(c, 60));
  return c.redirect(to, 303);
}

/** The message waiting for this page, if any; it is shown once. */
export function takeFlash(c: Context): Flash | null {
  const raw = getCookie(c, FLASH_COOKIE);
  if (raw === undefined) return null;
  deleteCookie(c, FLASH_COOKIE, cookieOptions(c, 0));
  try {
    const parsed = JSON.parse(raw) as Partial<Flash>;
    if ((parsed.kind === 'ok' || parsed.kind === 'error') && typeof parsed.text === 'string') return { kind: parsed.kind, text: parsed.text };
  } catch {
    // A cookie we did not write: ignore it.
  }
  return null;
}
