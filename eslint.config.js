// Lint rules: typescript-eslint's recommended set, type-aware, plus a few
// rules that catch the mistakes that matter in long-running async code.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import layers from './scripts/lint/layers.js';

export default tseslint.config(
  { ignores: ['node_modules/', 'coverage/', '.state/', 'dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // The product imports neither the CLI nor the harness (scripts/lint/layers.js).
    files: ['src/**/*.ts', 'harness/**/*.ts'],
    plugins: { layers },
    rules: { 'layers/imports': 'error' },
  },
  {
    // The ARM emulator stands for ARM: its rules come from Azure's published
    // sources, never from the product it checks (issue 53), so it imports
    // nothing of src/ (a rule written once would be trusted twice).
    files: ['harness/azure-emulator/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)src/',
              message:
                'the ARM emulator imports nothing of the product: take its rules from a cited public source (harness/azure-emulator/README.md)',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
