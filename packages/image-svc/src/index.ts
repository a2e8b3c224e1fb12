export { Puller, parsePinnedImages, type PullRequest } from './puller.js';
export { imageService } from './server.js';
