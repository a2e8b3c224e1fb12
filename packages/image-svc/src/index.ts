export { Puller, parsePinnedImages, type PullRequest } from './puller.js';
export { imageServiceHandlers } from './server.js';
