/**
 * What the rest of forgesync may ask of the cloning module: nothing yet.
 * It serves every source over Git's smart HTTP (`/git/…`) and needs no
 * caller of its own.
 */
export type CloningApi = Record<string, never>;
