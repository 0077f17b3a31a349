// Jest for the labextension's pure modules (job/, form/, api/): how events fold into job state, how
// the Promote form becomes a request, and the dialog's form rendered to markup (dialog.spec.tsx).
// The UI itself is tested in a real browser by ui-tests/ (galata).
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/labextension/src'],
  testMatch: ['**/__tests__/**/*.spec.ts', '**/__tests__/**/*.spec.tsx'],
  // @jupyterlab/translation ships ES modules only: ts-jest compiles it to CommonJS like the sources
  transformIgnorePatterns: ['/node_modules/(?!@jupyterlab/translation/)'],
  transform: {
    '^.+\\.[tj]sx?$': [
      'ts-jest',
      {
        tsconfig: {
          module: 'commonjs',
          target: 'ES2019',
          jsx: 'react',
          allowJs: true,
          strict: true,
          esModuleInterop: true,
          skipLibCheck: true,
          types: ['jest', 'node']
        }
      }
    ]
  }
};
