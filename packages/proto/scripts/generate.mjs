// Regenerates src/generated from api.proto: one TypeScript file per message,
// enum and service (proto-loader-gen-types), plus src/generated/cri.ts, which
// re-exports all of them so src/index.ts can expose them as one namespace.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
const outDir = join(packageDir, 'src', 'generated');

// Keep in step with LOADER_OPTIONS in src/index.ts: the generated __Output
// types describe what the loader produces only when both agree.
const generatorFlags = [
  '--keepCase',
  '--longs=String',
  '--enums=String',
  '--defaults',
  '--oneofs',
  '--grpcLib=@grpc/grpc-js',
  // NodeNext resolution needs explicit extensions on relative imports.
  '--importFileExtension=.js',
];

const require = createRequire(import.meta.url);
const loaderPackageJson = require.resolve('@grpc/proto-loader/package.json');
const generatorBin = join(dirname(loaderPackageJson), 'build', 'bin', 'proto-loader-gen-types.js');

// Start from an empty directory so types of removed messages do not linger.
rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });

execFileSync(process.execPath, [generatorBin, ...generatorFlags, `--outDir=${outDir}`, 'api.proto', 'nri.proto'], {
  cwd: packageDir,
  stdio: 'inherit',
});

function listTypeScriptFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listTypeScriptFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function writeTypeIndex(packageDir, indexFile) {
  const messageFiles = listTypeScriptFiles(join(outDir, packageDir))
    .map((path) => relative(outDir, path).split('\\').join('/'))
    .sort();
  const lines = [
    '// Written by scripts/generate.mjs; do not edit.',
    ...messageFiles.map((file) => `export type * from './${file.replace(/\.ts$/, '.js')}';`),
    '',
  ];
  writeFileSync(join(outDir, indexFile), lines.join('\n'));
}
writeTypeIndex('runtime', 'cri.ts');
writeTypeIndex('nri', 'nri-types.ts');

// The message and service schema as protobufjs JSON, so that the services build their
// serializers with protobufjs's light runtime instead of parsing api.proto on every start.
const protobuf = require('protobufjs');
function writeSchema(protoFile, schemaFile, constName) {
  const root = new protobuf.Root().loadSync(join(packageDir, protoFile), { keepCase: true });
  root.resolveAll();
  writeFileSync(
    join(outDir, schemaFile),
    [
      `// Written by scripts/generate.mjs from ${protoFile}; do not edit.`,
      '// protobufjs JSON (JSON.parse reads it faster than the same object written as code).',
      `export const ${constName} = ${JSON.stringify(JSON.stringify(root.toJSON()))};`,
      '',
    ].join('\n'),
  );
}
writeSchema('api.proto', 'api-schema.ts', 'API_SCHEMA_JSON');
writeSchema('nri.proto', 'nri-schema.ts', 'NRI_SCHEMA_JSON');
