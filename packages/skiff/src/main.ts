#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { existsSync } from 'node:fs';
import { configPathFor, loadConfig } from '@skiff/common/core';

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
      // Internal: bin/skiff-supervisor asks for its plan with it.
      plan: { type: 'boolean', default: false },
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
  // Each command loads only its own modules: `skiff up --plan` runs at every start of the supervisor.
  switch (command) {
    case 'up': {
      const up = await import('./commands/up.js');
      if (values.plan) return up.planUp(config, configPath);
      return values.detach ? up.upDetached(config, configPath) : up.upForeground(configPath);
    }
    case 'down':
      return (await import('./commands/down.js')).downCommand(config);
    case 'status':
      return (await import('./commands/status.js')).statusCommand(config, values.json);
    case 'reload':
      return (await import('./commands/reload.js')).reloadCommand(config);
    case 'install-units':
      return (await import('./commands/install-units.js')).installUnitsCommand(file, values.dest);
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
