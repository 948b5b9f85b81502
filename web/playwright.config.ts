import { defineConfig } from '@playwright/test';

// The browser suite drives Debian's Chromium (no browser download: this is
// playwright-core underneath, pointed at the system's binary) against one
// real `clopen dev --fakellm` that global-setup starts for the whole run
// (or against CLOPEN_E2E_URL, an instance already running). The tests run
// one at a time by default: every test's turns belong to the dev tenant, and
// two projects' turns starting at the same moment race on the engine's
// config dir, which is per tenant and not yet per project (a known defect:
// a project's instructions can be replaced by another project's before its
// agent reads them). One worker costs about 20 s over two.
const chromium = process.env.CLOPEN_CHROMIUM ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: './e2e',
  globalSetup: './e2e/global-setup.ts',
  timeout: 90_000,
  expect: { timeout: 20_000 },
  fullyParallel: true,
  workers: Number(process.env.CLOPEN_E2E_WORKERS ?? 1),
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
