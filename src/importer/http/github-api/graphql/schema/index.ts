import { buildSchema, type GraphQLSchema } from 'graphql';
import { connectionSdl } from './connections.js';
import { ISSUES_SDL } from './issues.js';
import { REPOSITORY_SDL } from './repository.js';
import { ROOT_SDL } from './root.js';

/**
 * The endpoint's schema, built once by the reference implementation from
 * the SDL. It has no resolvers attached: the values answered are model
 * objects (models/) whose properties and methods are named like the
 * fields (graphql-js's default resolver reads a property, or calls a
 * method with the field's arguments and the context), and whose
 * `__typename` picks the type of an interface or union.
 */
export const GITHUB_SCHEMA: GraphQLSchema = buildSchema([ROOT_SDL, REPOSITORY_SDL, ISSUES_SDL, connectionSdl()].join('\n'));
