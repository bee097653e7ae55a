import { z } from 'zod';

/**
 * A key to sign or verify with. A blank one (a variable set to a space) is a key anyone can sign with. Whitespace
 * around one (a pasted line break, a file read with its newline) is refused, not trimmed: it is almost never part
 * of the sender's secret, yet kept it fails every delivery with 401, and trimmed it would break the rare secret
 * that does hold it. Neither message holds the value.
 */
export const secret = z
  .string()
  .refine((value) => value.trim() !== '', { message: 'a secret cannot be empty or only whitespace: anyone could sign with it', abort: true })
  .regex(/^\S(?:[\s\S]*\S)?$/, 'starts or ends with whitespace (a pasted line break?), which the key would keep: remove it');
export const wellFormed = (value: string) => secret.safeParse(value).success;
