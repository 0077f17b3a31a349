/**
 * Generate labextension/src/api/schema.ts, the TypeScript types of the REST schemas, from
 * jupyter_promote/server/openapi.yaml (components/schemas) with openapi-typescript, formatted as
 * prettier formats the rest of the tree. `--check` regenerates in memory and fails (exit 1) when the
 * file on disk differs: the generated types have drifted from the OpenAPI document.
 *
 *   node labextension/tools/schema-types.mjs [--check] [--openapi PATH] [--out PATH]
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import openapiTS, { astToString } from 'openapi-typescript';
import * as prettier from 'prettier';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OPENAPI = path.join(ROOT, 'jupyter_promote/server/openapi.yaml');
const OUT = path.join(ROOT, 'labextension/src/api/schema.ts');

const HEADER = `/**
 * GENERATED FILE, DO NOT EDIT: the REST schemas of jupyter_promote/server/openapi.yaml as TypeScript,
 * written by \`jlpm build:types\` (labextension/tools/schema-types.mjs, openapi-typescript).
 * Change the OpenAPI document, then run \`jlpm build:types\`; \`jlpm lint:check\` fails while they differ.
 */
/* eslint-disable */
`;

/** The generated module's text for the OpenAPI document at `openapi`. */
export async function generate(openapi) {
  const ast = await openapiTS(await readFile(openapi, 'utf8'), {
    // a schema object with no properties (`parameters`, `monitor`) is any object, not an empty one
    emptyObjectsUnknown: true,
    // a request field with a default is still optional: the server fills it in
    defaultNonNullable: false
  });
  const text = HEADER + '\n' + astToString(ast);
  const options = (await prettier.resolveConfig(OUT)) ?? {};
  return prettier.format(text, { ...options, filepath: OUT });
}

function option(argv, name, fallback) {
  const at = argv.indexOf(name);
  return at >= 0 ? path.resolve(argv[at + 1]) : fallback;
}

async function main(argv) {
  const openapi = option(argv, '--openapi', OPENAPI);
  const out = option(argv, '--out', OUT);
  const generated = await generate(openapi);
  if (!argv.includes('--check')) {
    await writeFile(out, generated);
    console.log(`wrote ${path.relative(process.cwd(), out)} from ${path.relative(process.cwd(), openapi)}`);
    return 0;
  }
  const current = await readFile(out, 'utf8').catch(() => '');
  if (current !== generated) {
    console.error(
      `${path.relative(process.cwd(), out)} differs from what ${path.relative(process.cwd(), openapi)} generates:` +
        ' run `jlpm build:types` and commit the result'
    );
    return 1;
  }
  console.log(`${path.relative(process.cwd(), out)} matches ${path.relative(process.cwd(), openapi)}`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
