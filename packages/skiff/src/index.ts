export { SERVICES, type ServiceSpec } from './services.js';
export { CLI_NODE_OPTIONS } from './node-options.js';
export { SKIFF_COMMAND, SUPERVISOR_SCRIPT } from './paths.js';
