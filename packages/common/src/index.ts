export { createLogger, type Logger, type LogLevel } from './logger.js';
export { atomicWriteFile, atomicWriteJson, fsyncDir, readJsonIfExists } from './atomic-file.js';
export { loadConfig, configPathFor, defaultConfig, DEFAULT_CONFIG_PATH, ConfigError, type SkiffConfig, type ImageServiceConfig, type RuntimeServiceConfig } from './config.js';
export { StatusError, statusError, toServiceError, type GrpcCode } from './grpc-status.js';
export { listenOnUnixSocket, type UnixSocketServer } from './unix-socket-server.js';
export { writePidFile, readPidFile, isProcessAlive, removePidFile } from './pid-file.js';
export { SingleFlight } from './single-flight.js';
export { Semaphore } from './semaphore.js';
