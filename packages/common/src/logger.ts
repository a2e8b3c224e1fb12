import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** Structured JSON logs on stdout; the supervisor adds nothing but passes them through or into a file. */
export function createLogger(service: string, level: LogLevel = 'info'): Logger {
  return pino({ name: service, level, base: { service, pid: process.pid } });
}
