import { describe, expect, it } from 'vitest';
import { databaseTarget, StartFailure, starting } from '../../../src/cli/start-failure.ts';
import { UnknownFunctionRevision } from '../../../src/store/functions.ts';

describe('start-up failures', () => {
  it('shows where a PostgreSQL URL points without its user, password or options', () => {
    expect(databaseTarget('postgres://app:s3cret@db.internal:5432/oncehook')).toBe('db.internal:5432/oncehook');
    expect(databaseTarget('postgresql://app:pa/ss@w0rd@db.internal/oncehook?sslmode=require&password=x')).toBe('db.internal/oncehook');
    expect(databaseTarget('postgres://db.internal/oncehook')).toBe('db.internal/oncehook');
    // A "?" or "#" unencoded in the password: the driver's host and port lie inside it; nothing is printable.
    expect(databaseTarget('postgres://postgres:1234?x@127.0.0.1/db')).toBeNull();
    expect(databaseTarget('postgres://postgres:123#abc@127.0.0.1:5432/db')).toBeNull();
  });

  it('says a URL it cannot print is unreadable, naming no part of it', async () => {
    const url = 'postgres://postgres:1234?x@127.0.0.1/db';
    const unresolved = Object.assign(new Error('getaddrinfo ENOTFOUND postgres'), { code: 'ENOTFOUND', hostname: 'postgres' });
    const failure = await starting(url, () => Promise.reject(unresolved)).catch((error: Error) => error);
    expect(failure).toBeInstanceOf(StartFailure);
    expect(failure.message).toMatch(/^DATABASE_URL cannot be read: its password holds a "\?" or "#"/);
    expect(failure.message).not.toMatch(/postgres:|1234|127\.0\.0\.1/);
    const malformed = new URIError('URI malformed');
    expect((await starting('postgres://u:pa%zz@db/x', () => Promise.reject(malformed)).catch((error: Error) => error)).message).toMatch(/^DATABASE_URL is not a URL/);
  });

  it('points a login refused by pg_hba.conf at the server, a wrong password at the URL', async () => {
    const said = async (code: string, message: string) =>
      (await starting('postgres://app:s3cret@db/x', () => Promise.reject(Object.assign(new Error(message), { code }))).catch((error: Error) => error)).message;
    expect(await said('28000', 'no pg_hba.conf entry for host "10.0.0.5", user "app", database "x", no encryption')).toMatch(/pg_hba\.conf admits this host/);
    expect(await said('28P01', 'password authentication failed for user "app"')).toMatch(/correct the user or password in DATABASE_URL$/);
    // sslmode=require against a server without TLS.
    expect(await said('ECONNRESET', 'Client network socket disconnected before secure TLS connection was established')).toBe(
      'cannot reach PostgreSQL at db/x: the server closed the connection before TLS was set up — it may not accept TLS: enable ssl on the server, or drop sslmode=require from DATABASE_URL',
    );
  });

  it('says no host took the connection when a multi-host URL fails: a failover under way', async () => {
    const url = 'postgres://app:s3cret@db1:5432,db2:5432/x?target_session_attrs=read-write';
    const failed = (code: string) => starting(url, () => Promise.reject(Object.assign(new Error(`write ${code} db2:5432`), { code }))).catch((error: Error) => error);
    const standby = await failed('TARGET_SESSION_ATTRS_UNMET');
    expect(standby).toBeInstanceOf(StartFailure);
    expect(standby.message).toBe(
      'cannot reach PostgreSQL at db1:5432,db2:5432/x: no host there took the connection as target_session_attrs=read-write asks (the last one tried is a standby or read-only) — during a failover, start again once the standby is promoted; otherwise check the hosts in DATABASE_URL',
    );
    expect((await failed('ECONNREFUSED')).message).toMatch(/: no host there took the connection as target_session_attrs=read-write asks \(the last one tried refused the connection\)/);
    // One host that is a standby.
    const one = await starting('postgres://app:s3cret@db1/x?target_session_attrs=read-write', () =>
      Promise.reject(Object.assign(new Error('write TARGET_SESSION_ATTRS_UNMET db1:5432'), { code: 'TARGET_SESSION_ATTRS_UNMET' })),
    ).catch((error: Error) => error);
    expect(one.message).toBe(
      'cannot reach PostgreSQL at db1/x: it is not what target_session_attrs=read-write asks for (a standby or read-only) — correct DATABASE_URL, or start again once it is promoted',
    );
  });

  it('blames --host, not the database, for a listening address that does not resolve', async () => {
    const unresolved = Object.assign(new Error('getaddrinfo ENOTFOUND nosuch.invalid'), {
      code: 'ENOTFOUND',
      syscall: 'getaddrinfo',
      hostname: 'nosuch.invalid',
      listening: true,
    });
    const failure = await starting('postgres://app:s3cret@db/x', () => Promise.reject(unresolved)).catch((error: Error) => error);
    expect(failure.message).toBe('cannot listen on nosuch.invalid: no such address — correct --host');
  });

  it("says in its own words that a newer release's functions are in the database", async () => {
    const newer = new UnknownFunctionRevision('the database has revision 2 of oncehook_claim_batch, and this build knows revision 1');
    const failure = await starting('postgres://app:s3cret@db/x', () => Promise.reject(newer)).catch((error: Error) => error);
    expect(failure).toBeInstanceOf(StartFailure);
    expect(failure.message).toBe(newer.message);
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
