// The engines' readiness and model catalogs, fetched once per tab and
// kept: the picker asks often, the answers change rarely.

import { api, ok, type EngineModel, type EngineReadiness } from './api/client';

let engines: Promise<EngineReadiness[]> | null = null;
const models = new Map<string, Promise<{ models: EngineModel[]; message?: string }>>();

export function listEngines(refresh = false): Promise<EngineReadiness[]> {
  if (!engines || refresh) {
    engines = ok(api.GET('/v1/engines')).then((r) => r.engines);
    engines.catch(() => (engines = null));
  }
  return engines;
}

export function listModels(engine: string): Promise<{ models: EngineModel[]; message?: string }> {
  let p = models.get(engine);
  if (!p) {
    p = ok(api.GET('/v1/models', { params: { query: { engine } } }));
    p.then(
      (r) => r.models.length || models.delete(engine), // an empty catalog is asked again next time
      () => models.delete(engine),
    );
    models.set(engine, p);
  }
  return p;
}
