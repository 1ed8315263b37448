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
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
