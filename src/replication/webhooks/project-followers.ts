import type { ProjectDelivery } from './github-project.js';

/**
 * Acts on a project delivery (see Replication.followProjectDeliveries):
 * records durably what it will do, and returns the names of what follows
 * the delivery's repository (imports), empty when none does.
 */
export type ProjectFollower = (delivery: ProjectDelivery) => Promise<string[]>;

/** Who follows GitHub's project deliveries in this process (the importer, when it runs). */
export class ProjectFollowers {
  readonly #followers = new Set<ProjectFollower>();

  add(follower: ProjectFollower): () => void {
    this.#followers.add(follower);
    return () => this.#followers.delete(follower);
  }

  /** The names every follower returned; undefined when nothing follows (the delivery is then ignored). */
  async deliver(delivery: ProjectDelivery): Promise<string[] | undefined> {
    if (this.#followers.size === 0) return undefined;
    const names = await Promise.all([...this.#followers].map((follower) => follower(delivery)));
    return names.flat();
  }
}
