#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { configPathFor, loadConfig } from '@skiff/common/core';
import { upDetached, upForeground } from './commands/up.js';
import { downCommand } from './commands/down.js';
import { statusCommand } from './commands/status.js';
import { installUnitsCommand } from './commands/install-units.js';
import { reloadCommand } from './commands/reload.js';

const USAGE = `usage: skiff <command> [options]

commands:
  up [--detach]     start every service (foreground with logs, or in the background)
  down              stop the services (containers keep running)
  status [--json]   show each service, its socket and whether it answers
  reload            have every service re-read the configuration (SIGHUP)
  install-units [--dest DIR]
                    write systemd units for the services (default /etc/systemd/system) and,
                    where systemd runs the machine, enable skiff.target

options:
  --config PATH     configuration file (default: $SKIFF_CONFIG or /etc/skiff/skiff.toml)
`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      detach: { type: 'boolean', short: 'd', default: false },
      json: { type: 'boolean', default: false },
      dest: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const command = positionals[0];
  if (values.help || command === undefined) {
    process.stdout.write(USAGE);
    return command === undefined && !values.help ? 2 : 0;
  }
  const { file, explicit } = configPathFor(values.config);
  const config = await loadConfig(values.config);
  // Services read the same file; a default path that does not exist means defaults for them too.
  const configPath = explicit || existsSync(file) ? file : undefined;
  switch (command) {
    case 'up':
      return values.detach ? upDetached(config, configPath, fileURLToPath(import.meta.url)) : upForeground(config, configPath);
    case 'down':
      return downCommand(config);
    case 'status':
      return statusCommand(config, values.json);
    case 'reload':
      return reloadCommand(config);
    case 'install-units':
      return installUnitsCommand(file, values.dest);
    default:
      process.stderr.write(`unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`skiff: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
