import { createRouter } from '../../shared/platform/http/app';
import { ctxOf } from '../../shared/platform/contract/context';
import { download } from '../../shared/platform/http/download';
import { defineFamily } from '../../shared/platform/http/family';
import { exportBundle } from './export';
import * as routes from './routes';
import { tooLarge } from './parse';
import { IMPORT_TOPIC, importJob } from './process';
import { dropAbandonedImports, getImport, listImports, MAX_IMPORT_BYTES, runImport } from './service';

const router = createRouter()
  .openapi(routes.exportBundleRoute, async (c) => {
    const ctx = ctxOf(c);
    return download(c, {
      stream: await exportBundle(ctx),
      contentType: 'application/x-ndjson; charset=utf-8',
      name: 'engram-bundle',
      extension: 'jsonl',
      now: ctx.now,
    });
  })
  .openapi(routes.importRoute, async (c) => {
    const query = c.req.valid('query');
    // A declared length past the cap is refused before a byte is read; an undeclared one is counted as it streams.
    if (Number(c.req.header('content-length') ?? 0) > MAX_IMPORT_BYTES) throw tooLarge(MAX_IMPORT_BYTES);
    const done = await runImport(ctxOf(c), { format: query.format, dryRun: query.dry_run, body: c.req.raw.body });
    return done.status === 202 ? c.json(done.body, 202) : c.json(done.body, 200);
  })
  .openapi(routes.listImportsRoute, async (c) => c.json(await listImports(ctxOf(c), c.req.valid('query')), 200))
  .openapi(routes.getImportRoute, async (c) => c.json(await getImport(ctxOf(c), c.req.valid('param').import_id), 200));

export default defineFamily({
  name: 'portability',
  tag: { name: 'Portability', description: 'Back up the whole account as one file, and import bundles, JSONL and mem0 exports' },
  router,
  jobs: { [IMPORT_TOPIC]: importJob },
  maintenance: { abandoned_imports: dropAbandonedImports },
});
