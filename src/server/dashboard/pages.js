// forgesync dashboard: the pages, in the order of the navigation; the first is the
// home page (#/, and any address no page claims). Each is the ES module of its
// capability, in that capability's `dashboard/` folder (src/<capability>/dashboard/
// is served as /dashboard/<capability>/, see server/routes/dashboard.ts).
//
// A capability adds its page by writing its module (the shape is described in
// app.js) and one line here.

export const PAGE_MODULES = [
  '/dashboard/replication/overview.js',
  '/dashboard/replication/sources.js',
  '/dashboard/importer/imports.js',
  '/dashboard/feeds/feeds.js',
  '/dashboard/leases.js',
];
