export { TokenStore, TooManyTokens, TOKEN_TTL_MS, MAX_OUTSTANDING_TOKENS } from './token-store.js';
export { HEALTH_PATH } from './public-server.js';
