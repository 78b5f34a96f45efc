import { defineVerb } from '../../shared/platform/http/verb';
import { exportFile } from './export';
import * as s from './schemas';
import { list } from './service';
import { verify } from './verify';

/** The audit verbs the routes and the console share (docs/architecture.md#verbs). */
export const listAuditVerb = defineVerb({
  name: 'audit.list',
  method: 'get',
  input: { query: s.ListQuery },
  run: (ctx, query) => list(ctx, query),
});

/** The file to stream, with the format it is in (the download's extension). */
export const exportAuditVerb = defineVerb({
  name: 'audit.export',
  method: 'get',
  feature: 'audit_export',
  input: { query: s.ExportQuery },
  run: async (ctx, query) => ({ ...(await exportFile(ctx, query)), format: query.format }),
});

export const verifyAuditVerb = defineVerb({
  name: 'audit.verify',
  method: 'get',
  feature: 'audit_verify',
  confinable: true,
  input: {},
  run: (ctx) => verify(ctx),
});
