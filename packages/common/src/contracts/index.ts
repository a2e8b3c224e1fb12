export { ContractViolation, type ErrorAnswer } from './contract-error.js';
export {
  STREAM_REGISTRATION_PATH,
  parseStreamRequest,
  type StreamFlags,
  type ExecStreamRequest,
  type AttachStreamRequest,
  type PortForwardStreamRequest,
  type StreamRequest,
  type StreamRegistered,
} from './stream-registration.js';
export { LOGS_STATUS_PATH, logsContainerPath, matchLogsRoute, parseTrackContainerRequest, type LogsRoute, type TrackContainerRequest, type LogsStatus } from './logs-control.js';
export { parseOciProcess, type OciProcess, type OciUser, type OciCapabilities, type OciRlimit } from './oci-process.js';
