import { describe, expect, it } from 'vitest';
import { databaseTarget, StartFailure, starting } from '../../../src/cli/start-failure.ts';

describe('start-up failures', () => {
  it('shows where a PostgreSQL URL points without its user, password or options', () => {
    expect(databaseTarget('postgres://app:s3cret@db.internal:5432/oncehook')).toBe('db.internal:5432/oncehook');
    expect(databaseTarget('postgresql://app:pa/ss@w0rd@db.internal/oncehook?sslmode=require&password=x')).toBe('db.internal/oncehook');
    expect(databaseTarget('postgres://db.internal/oncehook')).toBe('db.internal/oncehook');
  });

  it('keeps an error it does not recognise as it was, stack and all', async () => {
    const bug = new TypeError('cannot read properties of undefined');
    await expect(starting('postgres://app:s3cret@db/x', () => Promise.reject(bug))).rejects.toBe(bug);
    const other = Object.assign(new Error('permission denied for schema public'), { code: '42501' });
    await expect(starting('postgres://app:s3cret@db/x', () => Promise.reject(other))).rejects.toBe(other);
  });

  it('does not blame a database when none is configured', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    await expect(starting(undefined, () => Promise.reject(refused))).rejects.toBe(refused);
    const inUse = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE', syscall: 'listen', address: '0.0.0.0', port: 8080 });
    await expect(starting(undefined, () => Promise.reject(inUse))).rejects.toBeInstanceOf(StartFailure);
  });
});
