export {
  InvalidReferenceError,
  parseReference,
  normalizeReference,
  formatReference,
  tagReference,
  digestReference,
  familiarName,
  type ImageReference,
} from './reference.js';
export { DIGEST_PATTERN, isDigest, parseDigest, isImageId, toImageId, type ParsedDigest } from './digest.js';
