import { z } from 'zod';

/**
 * Every setting forgesync reads: its key in the config file, its
 * environment variable and its schema. Later capabilities add rows here.
 */
export const SETTINGS = {
  dataDir: {
    env: 'FORGESYNC_DATA_DIR',
    schema: z.string().min(1, 'must not be empty'),
    doc: 'Directory for the SQLite file, mirrors and snapshots (default ./data).',
  },
  databaseUrl: {
    env: 'FORGESYNC_DATABASE_URL',
    schema: z.string().regex(/^(sqlite:|postgres(ql)?:\/\/)/i, 'must be sqlite:<file> or postgres://…'),
    doc: 'Registry database (default: sqlite:<dataDir>/forgesync.db).',
  },
  leaseUrl: {
    env: 'FORGESYNC_LEASE_URL',
    schema: z
      .string()
      .regex(/^(sqlite:|rediss?:\/\/|postgres(ql)?:\/\/|mysql:\/\/|mariadb:\/\/)/i, 'must be sqlite:<file>, redis://, postgres:// or mysql://'),
    doc: 'Lease backend (default: the same SQLite file as the registry).',
  },
} as const;

export type SettingKey = keyof typeof SETTINGS;
