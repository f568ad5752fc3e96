/*
 * Statement names for the texts PreparedQuery compiles (sql.ts). Such a
 * text never changes, so PostgreSQL connections prepare it under its name
 * (connect.ts): parsed and planned once per connection, then only bound
 * to values.
 */

const names = new Map<string, string>();

/** Gives `text` a statement name, once. */
export function nameStatement(text: string): void {
  if (!names.has(text)) names.set(text, `forgesync_${names.size + 1}`);
}

/** The statement name of `text`, when a prepared query compiled it. */
export function preparedStatementName(text: string): string | undefined {
  return names.get(text);
}
