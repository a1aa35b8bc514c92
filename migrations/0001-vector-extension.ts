import { vectorExtensionMigration } from '../src/index.js'

/** pgvector, which every pgscale table needs (`create extension if not exists vector`). */
export const { up, down } = vectorExtensionMigration
