/**
 * A small JSON-schema checker for the subset of OpenAPI 3.0 schema keywords
 * GitHub's REST description uses for the fake's operations: type (string or
 * list), nullable, properties, required, additionalProperties, items, enum,
 * oneOf / anyOf / allOf, $ref into `components`, minimum / maximum, and the
 * `date-time` / `uri` formats (checked loosely).
 */

export interface Schema {
  $ref?: string;
  type?: string | string[];
  nullable?: boolean;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  enum?: unknown[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  minimum?: number;
  maximum?: number;
  format?: string;
}

/** One mismatch: a JSON-pointer-like path into the value and what was wrong there. */
export interface SchemaError {
  path: string;
  message: string;
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

export class SchemaChecker {
  constructor(private readonly components: Record<string, Schema>) {}

  /** Every mismatch of `value` against `schema` (empty when it conforms). */
  check(value: unknown, schema: Schema, path = ''): SchemaError[] {
    const errors: SchemaError[] = [];
    this.visit(value, schema, path, errors);
    return errors;
  }

  private resolve(schema: Schema): Schema {
    let current = schema;
    for (let depth = 0; current.$ref !== undefined; depth++) {
      if (depth > 32) throw new Error(`$ref loop at ${schema.$ref}`);
      const name = current.$ref.replace('#/components/schemas/', '');
      const target = this.components[name];
      if (target === undefined) throw new Error(`unknown schema ${current.$ref}`);
      current = target;
    }
    return current;
  }

  private visit(value: unknown, raw: Schema, path: string, errors: SchemaError[]): void {
    const schema = this.resolve(raw);
    if (value === null && (schema.nullable === true || (Array.isArray(schema.type) && schema.type.includes('null')))) return;
    if (schema.allOf) for (const part of schema.allOf) this.visit(value, part, path, errors);
    if (schema.oneOf) this.alternatives(value, schema.oneOf, path, errors, 'oneOf', true);
    if (schema.anyOf) this.alternatives(value, schema.anyOf, path, errors, 'anyOf', false);
    if (schema.enum && !schema.enum.some((option) => option === value)) {
      errors.push({ path, message: `${JSON.stringify(value)} not in enum ${JSON.stringify(schema.enum)}` });
    }
    const actual = typeOf(value);
    if (schema.type !== undefined) {
      const allowed = Array.isArray(schema.type) ? schema.type : [schema.type];
      const ok = allowed.some((type) => type === actual || (type === 'number' && actual === 'integer'));
      if (!ok) {
        errors.push({ path, message: `expected ${allowed.join('|')}${schema.nullable ? '|null' : ''}, got ${actual}` });
        return;
      }
    }
    if (typeof value === 'number') {
      if (schema.minimum !== undefined && value < schema.minimum) errors.push({ path, message: `${value} < minimum ${schema.minimum}` });
      if (schema.maximum !== undefined && value > schema.maximum) errors.push({ path, message: `${value} > maximum ${schema.maximum}` });
    }
    if (typeof value === 'string' && schema.format === 'date-time' && !DATE_TIME.test(value)) {
      errors.push({ path, message: `${JSON.stringify(value)} is not a date-time` });
    }
    if (typeof value === 'string' && schema.format === 'uri' && !URL.canParse(value)) {
      errors.push({ path, message: `${JSON.stringify(value)} is not a uri` });
    }
    if (Array.isArray(value) && schema.items) {
      value.forEach((item, index) => this.visit(item, schema.items as Schema, `${path}/${index}`, errors));
    }
    if (actual === 'object') {
      const object = value as Record<string, unknown>;
      for (const name of schema.required ?? []) {
        if (!(name in object)) errors.push({ path, message: `missing required property ${name}` });
      }
      for (const [name, item] of Object.entries(object)) {
        const property = schema.properties?.[name];
        if (property) this.visit(item, property, `${path}/${name}`, errors);
        else if (schema.additionalProperties === false) errors.push({ path, message: `unexpected property ${name}` });
        else if (typeof schema.additionalProperties === 'object') this.visit(item, schema.additionalProperties, `${path}/${name}`, errors);
      }
    }
  }

  private alternatives(value: unknown, options: Schema[], path: string, errors: SchemaError[], keyword: string, exactlyOne: boolean): void {
    const results = options.map((option) => this.check(value, option, path));
    const passing = results.filter((result) => result.length === 0).length;
    if (passing === 0) {
      // Report the closest alternative's errors: the one with the fewest mismatches.
      const best = results.reduce((a, b) => (b.length < a.length ? b : a));
      errors.push({ path, message: `matches none of ${keyword} (${options.length} options); closest: ${best.slice(0, 3).map((e) => `${e.path} ${e.message}`).join('; ')}` });
    } else if (exactlyOne && passing > 1 && keyword === 'oneOf' && this.strictOneOf) {
      errors.push({ path, message: `matches ${passing} of oneOf` });
    }
  }

  /** OpenAPI `oneOf`s in GitHub's spec overlap (e.g. private-user vs public-user); off by default. */
  strictOneOf = false;
}
