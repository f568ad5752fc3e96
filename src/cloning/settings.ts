/** Settings of the cloning module: none yet (its limits are constants, see upload-pack.ts). */
export const cloningSettings = {};
