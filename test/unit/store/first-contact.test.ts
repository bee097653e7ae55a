import { describe, expect, it } from 'vitest';
import { firstContact } from '../../../src/store/migrate.ts';

describe('the first contact with PostgreSQL before migrating', () => {
  it('gives up on a statement that never answers, as a connect timeout the start-up says in one line', async () => {
    // A host that accepts and closes during start-up leaves the driver reconnecting, its statement pending for good.
    await expect(firstContact(new Promise<never>(() => {}), 30)).rejects.toMatchObject({ code: 'CONNECT_TIMEOUT' });
    expect(await firstContact(Promise.resolve('answered'), 30)).toBe('answered');
  });
});
