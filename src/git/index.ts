/**
 * The git layer: hardened process runner, URL and path validation, bare mirrors.
 * @packageDocumentation
 */
export * from './errors.js';
export { parseProtocols, validateRemoteUrl, urlHost, urlProtocol, KNOWN_PROTOCOLS, DEFAULT_PROTOCOLS, MAX_URL_LENGTH } from './url.js';
export { sanitizeName, mirrorDirName, safeJoin, urlDigest, TEMP_PREFIX } from './paths.js';
export {
  GitRunner,
  DEFAULT_GIT_TIMEOUT_MS,
  DEFAULT_MAX_STDOUT_BYTES,
  type GitRunnerOptions,
  type GitRunOptions,
  type GitRunResult,
} from './runner.js';
export {
  syncMirror,
  lsRemote,
  localRefs,
  localHead,
  refsChecksum,
  countRefChanges,
  cleanupTempDirs,
  removeMirror,
  mirrorPathFor,
  type SyncMirrorOptions,
  type MirrorSyncResult,
  type RefMap,
  type RemoteListing,
} from './mirror.js';
export { listRemote, readLocalListing } from './remote-refs.js';
