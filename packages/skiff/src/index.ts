export { SERVICES, type ServiceSpec } from './services.js';
export { SUPERVISOR_NODE_OPTIONS } from './node-options.js';
