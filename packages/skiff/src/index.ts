export { SERVICES, type ServiceSpec } from './services.js';
