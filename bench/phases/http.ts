/** (b) The HTTP ceiling: the same load against a bare Hono echo on the same server adapter. */
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
    return { load, serverCpu };
  } finally {
    await echo.stop();
  }
}
