/** (b) The HTTP ceiling: the same load against a bare Hono echo on the same server adapter. */
import type { LoadResult } from '../load/protocol.ts';
import { runLoad } from '../load/run.ts';
import { CpuWatch } from '../proc.ts';
import { startEcho } from '../servers/start.ts';
import { progressLine, type Context, type HttpResult } from './context.ts';
import { closedLoop } from './load-spec.ts';

export async function runHttp(ctx: Context): Promise<HttpResult> {
  const echo = await startEcho(ctx.cleanup);
  try {
    const cpu = new CpuWatch({ server: echo.child.pid });
    let serverCpu: number | null = null;
    // The echo does not deduplicate, so the same signed deliveries are reused rather than signing thousands more.
    const load = await runLoad(closedLoop(ctx, { label: 'http', origin: echo.origin }, { presign: 10_000, cycle: true }), ctx.cleanup, {
      onProgress: (p) => ctx.say(progressLine(p)),
      onWindow: (edge) => {
        if (edge === 'start') cpu.start();
        else serverCpu = cpu.stop().processes.server ?? null;
      },
    });
    const storm = await stormFloor(ctx, echo.origin, echo.child.pid);
    return { load, serverCpu, ...storm };
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
  const cpu = new CpuWatch({ server: pid });
  let stormServerCpu: number | null = null;
  const runId = `echo-storm-${process.pid}-${Date.now().toString(36)}`;
  const storm = await runLoad(
    { kind: 'burst', label: 'echo-storm', origin, path: '/in/shop', count: ctx.options.stormSize, bodyBytes: ctx.options.bodyBytes, runId },
    ctx.cleanup,
    {
      onWindow: (edge) => {
        if (edge === 'start') cpu.start();
        else stormServerCpu = cpu.stop().processes.server ?? null;
      },
    },
  );
  return { storm, stormServerCpu };
}
