// Jest for the labextension's pure modules (labextension/src/model.ts, form.ts): how events fold
// into job state, and how the Promote form becomes a request. The UI itself is tested in a real
// browser by ui-tests/ (galata).
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/labextension/src'],
  testMatch: ['**/__tests__/**/*.spec.ts'],
  transform: {
    '^.+\\.tsx?$': [
      'ts-jest',
      {
        tsconfig: {
          module: 'commonjs',
          target: 'ES2019',
          strict: true,
          esModuleInterop: true,
          skipLibCheck: true,
          types: ['jest', 'node']
        }
      }
    ]
  }
};
