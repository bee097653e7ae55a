import type { Store } from '../store/connect.ts';
import { liveInstances, type LiveInstance } from '../store/instances.ts';

/** The live instances, and whether they run different configs: `GET /api/instances`, and the dashboard's warning. */
export interface InstancesAnswer {
  instances: LiveInstance[];
  /** Each config version the live instances run, the most common first. */
  configVersions: { configVersion: string; instances: number }[];
  differ: boolean;
}

export async function instancesAnswer(store: Store): Promise<InstancesAnswer> {
  const instances = await liveInstances(store.db);
  const counts = new Map<string, number>();
  for (const { configVersion } of instances) counts.set(configVersion, (counts.get(configVersion) ?? 0) + 1);
  const configVersions = [...counts].map(([configVersion, n]) => ({ configVersion, instances: n })).sort((a, b) => b.instances - a.instances);
  return { instances, configVersions, differ: configVersions.length > 1 };
}
