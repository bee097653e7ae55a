/** Writes oncehook.schema.json from the same zod schema that validates the config at start. */
import { writeFileSync } from 'node:fs';
import { z } from 'zod';
import { configSchema } from '../src/config/schema.ts';

export function configJsonSchema(): string {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' });
  return `${JSON.stringify({ ...schema, title: 'oncehook configuration' }, null, 2)}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(new URL('../oncehook.schema.json', import.meta.url), configJsonSchema());
  console.log('wrote oncehook.schema.json');
}
