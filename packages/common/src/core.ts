// The part of @skiff/common that does not load @grpc/grpc-js, for services that never speak gRPC
// (imported as '@skiff/common/core').
export { createLogger, type Logger, type LogLevel } from './logger.js';
export { atomicWriteFile, atomicWriteJson, fsyncDir, readJsonIfExists, removeAtomicWriteDebris, replaceFileNow } from './atomic-file.js';
export { loadConfig, configPathFor, defaultConfig, parseDuration, parseIdRange, MIN_USERNS_HOST_ID, type IdRange, DEFAULT_CONFIG_PATH, ConfigError, type SkiffConfig, type ImageServiceConfig, type RuntimeServiceConfig, type RuntimeHandlerConfig, type RuntimeHandlerKind, RUNSC_DEFAULT_ARGS, type StreamServiceConfig, type LogsServiceConfig, type NriConfig } from './config.js';
export { bindPrivateSocket } from './private-socket.js';
export { writePidFile, readPidFile, isProcessAlive, removePidFile } from './pid-file.js';
export { SingleFlight } from './single-flight.js';
export { Semaphore } from './semaphore.js';
export { Mutex } from './mutex.js';
export { StepTimer } from './step-timer.js';
export { pollUntil, sleep, withTimeout } from './poll.js';
export { stopOnSignals } from './daemon-shutdown.js';
export { errnoCode, errorMessage } from './errno.js';
export { pathExists } from './path-exists.js';
export { openLogDirectory, openLogFile, UnsafeLogPath } from './log-file.js';
export { runCommand, runReportingCommand, runCommandsThroughSpawnServer, stopSpawnServer, CommandTimeoutError, type CommandResult, type ReportedResult, type RunCommandOptions } from './run-command.js';
export { SpawnServer } from './spawn-server.js';
export { parseProcStat, readProcStat, type ProcStat } from './proc-stat.js';
export { mountFilesystem, mountFlagsAndData, unmountFilesystem, MountCallError } from './mount-calls.js';
export {
  DEFAULT_BRIDGE_CONFLIST,
  DEFAULT_CONFLIST_FILE,
  DEFAULT_NETWORK_NAME,
  DEFAULT_BRIDGE,
  DEFAULT_SUBNET,
  FALLBACK_SUBNETS,
  LOOPBACK_NETWORK,
  bridgeNetworkConfig,
  chooseSubnet,
  cidrsOverlap,
  parseCidr,
  hostRoutes,
  type BridgeNetworkOptions,
  type CniNetworkConfig,
  type CniPluginConfig,
} from './cni-default-network.js';
export * from './contracts/index.js';
export { ensureJournald, journaldRunning, JOURNALD_BINARY, JOURNALD_NATIVE_SOCKET, JOURNALD_STDOUT_SOCKET } from './journald.js';
export { requireHostTools, MissingHostToolsError, type HostTool } from './host-tools.js';
export { notifyReady } from './systemd-notify.js';
export { changedKeys, reloadConfigOnSighup, type ConfigApplier } from './config-reload.js';
export { SANDBOX_RUNTIME_LAUNCHER, innerPidFile, killSandboxedExec } from './sandbox-runtime-launcher.js';
export { conmonRuntimeArgs, runtimeCommand, type RuntimeBinary } from './runtime-binary.js';
export { CONMON_PIPE_ENV, conmonEnvironment, parseConmonMessage, ConmonMessageError, type ConmonMessage, type ConmonPipe } from './conmon-protocol.js';
export { formatRecords, formatTimestamp, parseCriLine, parseCriLog, parseRfc3339Nano, reassembleStreams, reassembleConmonLog, MAX_RECORD_CONTENT, CriParseError, type CriRecord, type StreamName } from './cri-log.js';
export { httpCall, jsonBody, nobodyListens, type HttpAnswer, type HttpCallOptions, type HttpTarget } from './http-call.js';
export { nowNanos } from './cri-time.js';
export { collectGarbageWhenQuiet } from './idle-collection.js';
export { ALLOCATOR_VARIABLES, keepAllocatorToThisProcess } from './allocator-environment.js';
