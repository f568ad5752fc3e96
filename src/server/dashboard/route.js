// forgesync dashboard: the routing most pages share. A page with a list at
// #/<base> and one item at #/<base>/<name> routes with listAndItem(); a name
// that does not decode (a stray %) shows the list.

/**
 * A page's `route(path, params)` for a list view at `/<base>` and an item
 * view at `/<base>/<name>`: `{ view: listView, params }` or `{ view:
 * itemView, name }`, null for a path of another page.
 */
export function listAndItem(base, listView, itemView) {
  const item = new RegExp(`^/${base}/(.+)$`);
  return (path, params) => {
    const match = item.exec(path);
    if (!match) return path === `/${base}` ? { view: listView, params } : null;
    try {
      return { view: itemView, name: decodeURIComponent(match[1]) };
    } catch {
      return { view: listView, params };
    }
  };
}
