/** (b) The HTTP ceiling: the same load against a bare Hono echo on the same server adapter. */
import type { LoadResult } from '../load/protocol.ts';
import { watchedLoad } from '../load/run.ts';
import { startEcho } from '../servers/start.ts';
import { progressLine, type Context, type HttpResult } from './context.ts';
import { closedLoop } from './load-spec.ts';

export async function runHttp(ctx: Context): Promise<HttpResult> {
  const echo = await startEcho(ctx.cleanup);
  try {
    // The echo does not deduplicate, so the same signed deliveries are reused rather than signing thousands more.
    const { load, cpu } = await watchedLoad(
      closedLoop(ctx, { label: 'http', origin: echo.origin }, { presign: 10_000, cycle: true }),
      ctx.cleanup,
      { server: echo.child.pid },
      { onProgress: (p) => ctx.say(progressLine(p)) },
    );
    const storm = await stormFloor(ctx, echo.origin, echo.child.pid);
    return { load, serverCpu: cpu?.processes.server ?? null, ...storm };
  } finally {
    await echo.stop();
  }
}

/**
 * The storm's floor: the same burst on open connections, against a server that does nothing but read and
 * answer. On two cores shared with the load generator this alone takes a large part of the storm's 200 ms, so
 * the gateway's storm figure is read beside it. The echo is warm from the closed loop above, as the gateway
 * is from its warm-up.
 */
async function stormFloor(ctx: Context, origin: string, pid: number): Promise<{ storm: LoadResult; stormServerCpu: number | null }> {
  ctx.say(`the same storm against the echo: ${ctx.options.stormSize} at once…`);
  const runId = `echo-storm-${process.pid}-${Date.now().toString(36)}`;
  const { load: storm, cpu } = await watchedLoad(
    { kind: 'burst', label: 'echo-storm', origin, path: '/in/shop', count: ctx.options.stormSize, bodyBytes: ctx.options.bodyBytes, runId },
    ctx.cleanup,
    { server: pid },
  );
  return { storm, stormServerCpu: cpu?.processes.server ?? null };
}
