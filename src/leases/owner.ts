/*
 * Owner names: the short text a lease (or a snapshot hold) records about who
 * holds it, e.g. `sync linux` or `import acme`, shown by `lease list`, in skip
 * lines and in `snapshot holds`. The lease manager refuses a name longer than
 * MAX_OWNER_LENGTH (validate.ts); names built from a source's or an import's
 * name can be longer, so their makers cut them with ownerName() instead.
 */

/** Longest owner name the lease manager accepts, in UTF-16 code units (`String.length`). */
export const MAX_OWNER_LENGTH = 128;

/**
 * `name` cut to MAX_OWNER_LENGTH code units: what the manager accepts as an
 * owner (as long as it has no control characters). Shorter names are kept as
 * they are. A cut never splits a character made of two code units (an emoji
 * at the boundary): half of one is not valid text, and the manager refuses it.
 */
export function ownerName(name: string): string {
  if (name.length <= MAX_OWNER_LENGTH) return name;
  const last = name.charCodeAt(MAX_OWNER_LENGTH - 1);
  const splitsPair = last >= 0xd800 && last <= 0xdbff;
  return name.slice(0, splitsPair ? MAX_OWNER_LENGTH - 1 : MAX_OWNER_LENGTH);
}
