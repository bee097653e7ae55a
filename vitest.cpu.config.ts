import { mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';
export default mergeConfig(base, { test: { setupFiles: ['/tmp/tmp.jWuSuSOK2z/cpu-probe.ts'] } });
