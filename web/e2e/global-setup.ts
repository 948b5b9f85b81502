// global-setup starts the system the browser suite runs against: it builds
// the clopen binary, makes a fresh database on the PostgreSQL server
// DATABASE_URL names (the local one by default), and runs `clopen dev
// --fakellm` on free ports with its own data directory, the e2e scenarios
// (e2e/scenarios, plus a generated one of 5,000 messages) and every text
// delta sent on its own (CLOPEN_COALESCE=0, so a 2,000-delta answer is
// 2,000 frames). The tests learn where it runs from CLOPEN_E2E_* variables.
// Teardown stops it (SIGINT: clopen dev stops every process it started)
// and drops the database.

import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, createWriteStream, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { manyScenario } from './scenarios/many';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

export default async function globalSetup(): Promise<(() => Promise<void>) | void> {
  if (process.env.CLOPEN_E2E_URL) {
    process.env.CLOPEN_E2E_KEY_FILE ??= join(process.env.CLOPEN_DATA ?? join(process.env.HOME ?? '', '.local/share/clopen'), 'dev-api-key');
    return; // an instance the developer runs, with the e2e scenarios in its CLOPEN_SCENARIOS
  }
  const dir = mkdtempSync(join(tmpdir(), 'clopen-web-e2e-'));
  const bin = join(dir, 'clopen');
  console.log(`e2e: building clopen into ${dir}`);
  execFileSync('go', ['build', '-o', bin, './cmd/clopen'], { cwd: root, stdio: 'inherit' });

  const scenarios = join(dir, 'scenarios');
  mkdirSync(scenarios);
  for (const f of readdirSync(join(here, 'scenarios')).filter((f) => f.endsWith('.json'))) {
    cpSync(join(here, 'scenarios', f), join(scenarios, f));
  }
  writeFileSync(join(scenarios, 'many.json'), JSON.stringify(manyScenario(5000)));

  const admin = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable';
  const name = `clopen_web_${randomBytes(6).toString('hex')}`;
  await sql(admin, `CREATE DATABASE ${name}`);
  const db = new URL(admin);
  db.pathname = `/${name}`;

  const data = join(dir, 'data');
  const log = createWriteStream(join(dir, 'clopen-dev.log'));
  const child = spawn(bin, ['dev', '--fakellm'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: db.toString(),
      CLOPEN_DATA: data,
      CLOPEN_HTTP_ADDR: '127.0.0.1:0',
      CLOPEN_ADMIN_ADDR: 'off',
      CLOPEN_NATS_PORT: '-1',
      CLOPEN_SCENARIOS: scenarios,
      CLOPEN_COALESCE: '0',
      CLOPEN_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.pipe(log);
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`clopen dev did not start in 4 minutes; its log is ${join(dir, 'clopen-dev.log')}`)), 240_000);
    child.stdout.on('data', (b: Buffer) => {
      log.write(b);
      out += b.toString();
      const m = /Clopen is running at (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok(m[1]!);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`clopen dev exited with ${code}; its log is ${join(dir, 'clopen-dev.log')}`));
    });
  });
  console.log(`e2e: clopen dev at ${url} (log: ${join(dir, 'clopen-dev.log')})`);
  process.env.CLOPEN_E2E_URL = url;
  process.env.CLOPEN_E2E_KEY_FILE = join(data, 'dev-api-key');

  return async () => {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGINT');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(killer);
    await sql(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((e) => console.error(`e2e: drop ${name}: ${e}`));
    if (!process.env.CLOPEN_E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  };
}

async function sql(url: string, statement: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(statement);
  } finally {
    await c.end();
  }
}
