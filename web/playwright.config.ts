import { defineConfig } from '@playwright/test';

// The browser suite drives Debian's Chromium (no browser download: this is
// playwright-core underneath, pointed at the system's binary) against one
// real `clopen dev --fakellm` that global-setup starts for the whole run
// (or against CLOPEN_E2E_URL, an instance already running). Two tests run at
// a time by default (CLOPEN_E2E_WORKERS): their turns all belong to the dev
// tenant, and each chat session's runs have an engine config dir of their
// own, so one test's project never configures another's turn.
const chromium = process.env.CLOPEN_CHROMIUM ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: './e2e',
  globalSetup: './e2e/global-setup.ts',
  timeout: 90_000,
  expect: { timeout: 20_000 },
  fullyParallel: true,
  workers: Number(process.env.CLOPEN_E2E_WORKERS ?? 2),
  retries: 0,
  reporter: process.env.CI ? [['list'], ['json', { outputFile: 'test-results/results.json' }]] : 'list',
  use: {
    browserName: 'chromium',
    viewport: { width: 1280, height: 800 },
    actionTimeout: 15_000,
    launchOptions: {
      executablePath: chromium,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--enable-precise-memory-info',
      ],
    },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
  },
  // The measurements run last, alone, so the other tests' load does not
  // skew them (npx playwright test --project perf --no-deps runs them only).
  projects: [
    { name: 'functional', testIgnore: /perf\.spec\.ts/ },
    { name: 'perf', testMatch: /perf\.spec\.ts/, dependencies: ['functional'] },
  ],
});
