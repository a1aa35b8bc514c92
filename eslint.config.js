import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/'] },
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
            { regex: '(^|/)src/[a-z-]+/', message: 'import from src/index.js (the public API) or src/bench-kit.js, not from inside src/.' },
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
