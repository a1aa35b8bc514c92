import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import rooms from './scripts/eslint/import-rooms.js'

// The rooms of src/ and what each may import (besides itself and src/errors.ts), lowest first.
// A room with an index.ts is entered through it. ARCHITECTURE.md describes each room.
const LOW = ['src/util', 'src/sql']
const SRC_ROOMS = {
  'src/util': [],
  'src/sql': ['src/util'],
  'src/db': [...LOW],
  'src/filter': [...LOW],
  'src/plan': ['src/db', ...LOW],
  // Read replicas with read-your-writes: routing the store's and the rollup's reads.
  'src/replicas': ['src/db', ...LOW],
  // The store, bottom to top: what a store is, its DDL and catalog, writing rows in, one tenant's
  // reads and writes, then tiers and recall; the facade (src/store/*.ts) over all of them.
  'src/store/config': ['src/replicas', ...LOW],
  'src/store/schema': ['src/store/config', 'src/db', 'src/filter', ...LOW],
  'src/store/ingest': ['src/store/schema', 'src/store/config', 'src/db', ...LOW],
  'src/store/tenant': ['src/store/ingest', 'src/store/schema', 'src/store/config', 'src/replicas', 'src/db', 'src/filter', ...LOW],
  'src/store/tuning': ['src/store/tenant', 'src/store/ingest', 'src/store/schema', 'src/store/config', 'src/db', 'src/filter', ...LOW],
  'src/store/spaces': [
    'src/store/tuning',
    'src/store/tenant',
    'src/store/ingest',
    'src/store/schema',
    'src/store/config',
    'src/replicas',
    'src/db',
    ...LOW,
  ],
  'src/store': [
    'src/store/spaces',
    'src/store/tuning',
    'src/store/tenant',
    'src/store/ingest',
    'src/store/schema',
    'src/store/config',
    'src/replicas',
    'src/db',
    'src/filter',
    'src/plan',
    ...LOW,
  ],
  // The rollup, bottom to top: declaring one, its statements, its objects on the server, what it
  // does with buckets; the facade (src/rollup/*.ts) over all of them.
  'src/rollup/config': ['src/replicas', ...LOW],
  'src/rollup/sql': ['src/rollup/config', ...LOW],
  'src/rollup/schema': ['src/rollup/sql', 'src/rollup/config', 'src/db', 'src/filter', ...LOW],
  'src/rollup/buckets': ['src/rollup/schema', 'src/rollup/sql', 'src/rollup/config', 'src/replicas', 'src/db', ...LOW],
  'src/rollup': [
    'src/rollup/buckets',
    'src/rollup/schema',
    'src/rollup/sql',
    'src/rollup/config',
    'src/replicas',
    'src/db',
    'src/filter',
    ...LOW,
  ],
  // What a deployment runs on a schedule (the pgscale CLI's work): over the store and the rollup.
  'src/ops': ['src/store', 'src/rollup', 'src/db', ...LOW],
  // Framework adapters (pgscale/langchain, pgscale/mastra, pgscale/llamaindex): over the store's
  // public API only, each its own subpath export; nothing in src/ imports them.
  'src/adapters/langchain': ['src/store', 'src/filter', ...LOW],
  'src/adapters/mastra': ['src/store', 'src/filter', ...LOW],
  'src/adapters/llamaindex': ['src/store', 'src/filter', ...LOW],
  // The package's entry points (src/index.ts, src/bench-kit.ts) re-export every room.
  src: ['src/ops', 'src/store', 'src/rollup', 'src/replicas', 'src/plan', 'src/filter', 'src/db', ...LOW],
}

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'site/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "BinaryExpression[operator='==='] > MemberExpression.left[property.name='message']",
          message: 'Branch on an error code (SQLSTATE / PgScaleError.code), never on message text.',
        },
      ],
    },
  },
  {
    // Node scripts (plain JavaScript).
    files: ['scripts/**/*.js', 'scripts/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    // Rooms import one way (scripts/eslint/import-rooms.js).
    files: ['src/**/*.ts'],
    plugins: { rooms },
    rules: { 'rooms/import-rooms': ['error', { rooms: SRC_ROOMS, shared: ['src/errors.ts'] }] },
  },
  {
    // Small functions with one job: a long one is split into named steps (tests are exempt).
    files: ['src/**/*.ts', 'bench/**/*.ts', 'cli/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80 }] },
  },
  {
    // Outside src/, pgscale is used through its two entries: the public API and the bench kit.
    files: ['bench/**/*.ts', 'cli/**/*.ts', 'test/**/*.ts', 'examples/**/*.ts', 'migrations/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)src/(?!adapters/[a-z]+/index\\.js$)[a-z-]+/',
              message:
                'import from src/index.js (the public API), src/bench-kit.js or an adapter entry (src/adapters/<framework>/index.js), not from inside src/.',
            },
          ],
        },
      ],
    },
  },
  {
    // src/ is self-contained: it imports nothing from the folders around it.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/migrations/**', '**/bench/**', '**/cli/**', '**/test/**', '**/examples/**'],
              message: 'src/ imports nothing outside src/.',
            },
          ],
        },
      ],
    },
  },
)
