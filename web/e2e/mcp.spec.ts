import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { Page } from '@playwright/test';
import { expect, saved, shot, test, type App } from './fixtures';

// The MCP servers' settings against the real stack: the bridge probes what
// the page adds, and a sign-in is refused with the API's own message (no
// authorization server answers here). The statuses the API refuses with
// are the ones these tests provoke: a field error (400), a sign-in the
// server cannot start (422, 502).
test.use({ refusals: [400, 422, 502] });

const unique = () => Math.random().toString(36).slice(2, 8);

// Nothing listens on the discard port of the loopback address.
const unreachable = 'http://127.0.0.1:9/mcp';

/** refusal is the message the API answers a call with, which must fail. */
async function refusal(app: App, method: string, path: string, body?: unknown): Promise<string> {
  const err = await app.api(method, path, body).then(
    () => new Error(`${method} ${path} succeeded`),
    (e: Error) => e,
  );
  const json = /^\S+ \S+: \d{3} (.*)$/s.exec(err.message)?.[1];
  if (!json) throw err;
  return JSON.parse(json).error.message as string;
}

async function addRemote(page: Page, slug: string, url: string, headers: [string, string][] = []): Promise<void> {
  await page.getByRole('button', { name: 'New server' }).click();
  const form = page.getByRole('form', { name: 'New MCP server' });
  await form.getByLabel('Slug').fill(slug);
  await form.getByLabel('URL').fill(url);
  for (const [i, [name, value]] of headers.entries()) {
    await form.getByRole('button', { name: 'Add header' }).click();
    await form.getByLabel(`Header name ${i + 1}`).fill(name);
    await form.getByLabel(`Header value ${i + 1}`).fill(value);
  }
  await form.getByRole('button', { name: 'Add server' }).click();
  await expect(saved(page)).toHaveText(`Saved ${slug}.`);
}

const row = (page: Page, slug: string) => page.getByRole('row', { name: new RegExp(slug) });

test('a remote server: a bad URL is refused at its field, then it is added, checked, refused a sign-in and deleted', async ({ page, app }) => {
  const slug = `remote-${unique()}`;
  const secret = `s3cret-${unique()}`;
  await page.goto(`${app.url}/settings/mcp-servers`);
  await expect(page.getByRole('heading', { name: 'MCP servers', level: 2 })).toBeVisible();

  // Plain http to a host the operator does not list: the API names the url.
  await page.getByRole('button', { name: 'New server' }).click();
  const form = page.getByRole('form', { name: 'New MCP server' });
  await form.getByLabel('Slug').fill(slug);
  await form.getByLabel('URL').fill('http://example.com/mcp');
  await form.getByRole('button', { name: 'Add server' }).click();
  await expect(form.getByRole('alert')).toContainText('server.url "http://example.com/mcp": plain http is allowed only to hosts');
  await expect(form.getByLabel('URL')).toHaveAttribute('aria-invalid', 'true');
  await expect(form.getByLabel('URL')).toHaveAccessibleDescription(/plain http is allowed only/);
  await form.getByRole('button', { name: 'Cancel' }).click();

  await addRemote(page, slug, unreachable, [['Authorization', `Bearer ${secret}`]]);
  await expect(row(page, slug)).toContainText(unreachable);
  await expect(row(page, slug)).toContainText('headers: Authorization');
  await expect(row(page, slug)).toContainText('not checked');
  // The header's value went in and is nowhere on the page, nor in the API's answer.
  await expect(page.locator('body')).not.toContainText(secret);
  expect(await page.locator('input').evaluateAll((es, s) => es.some((e) => (e as HTMLInputElement).value.includes(s)), secret)).toBe(false);
  expect(JSON.stringify(await app.api('GET', `/v1/mcp-servers/${slug}`))).not.toContain(secret);

  await row(page, slug).getByRole('button', { name: 'Check' }).click();
  await expect(row(page, slug).locator('[data-state]')).toHaveText('unreachable');
  await shot(page, 'settings-mcp-servers');

  // Sign in: the stack names its callback, but nothing answers at the
  // server's URL, so the API refuses, and the page says what it said.
  const said = await refusal(app, 'POST', `/v1/mcp-servers/${slug}/oauth`, {});
  let popups = 0;
  page.on('popup', () => popups++);
  await row(page, slug).getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toHaveText(said);
  expect(popups).toBe(0);

  await row(page, slug).getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete server' }).click();
  await expect(saved(page)).toHaveText(`Deleted ${slug}.`);
  await expect(row(page, slug)).toHaveCount(0);
  const left = (await app.api('GET', '/v1/mcp-servers')).mcpServers as { slug: string }[];
  expect(left.map((s) => s.slug)).not.toContain(slug);
});

test('a stdio server shows its command and the names of its env, never the values', async ({ page, app }) => {
  const slug = `local-${unique()}`;
  const secret = `tok-${unique()}`;
  await page.goto(`${app.url}/settings/mcp-servers`);
  await page.getByRole('button', { name: 'New server' }).click();
  const form = page.getByRole('form', { name: 'New MCP server' });
  await form.getByLabel('Kind').selectOption('stdio');
  await form.getByLabel('Slug').fill(slug);
  await form.getByLabel('Command').fill('npx');
  await form.getByLabel('Arguments, one a line').fill('-y\n@example/mcp-server');
  await form.getByRole('button', { name: 'Add variable' }).click();
  await form.getByLabel('Variable name 1').fill('API_TOKEN');
  await form.getByLabel('Variable value 1').fill(secret);
  await form.getByRole('button', { name: 'Add server' }).click();
  await expect(saved(page)).toHaveText(`Saved ${slug}.`);
  await expect(row(page, slug)).toContainText('stdio');
  await expect(row(page, slug)).toContainText('npx -y @example/mcp-server');
  await expect(row(page, slug)).toContainText('env: API_TOKEN');
  await expect(row(page, slug).getByRole('button', { name: 'Sign in' })).toHaveCount(0);
  await expect(page.locator('body')).not.toContainText(secret);
  await app.api('DELETE', `/v1/mcp-servers/${slug}`);
});

test("a project's servers are its own", async ({ page, app, project }) => {
  const slug = `proj-${unique()}`;
  await page.goto(`${app.url}/settings/mcp-servers`);
  await page.getByLabel('Servers of').selectOption('project');
  await page.getByRole('region', { name: 'MCP servers' }).getByLabel('Project').selectOption(project.id);
  await addRemote(page, slug, unreachable);
  await expect(row(page, slug)).toBeVisible();
  const own = (await app.api('GET', `/v1/projects/${project.id}/mcp-servers`)).mcpServers as { slug: string }[];
  expect(own.map((s) => s.slug)).toContain(slug);
  const tenant = (await app.api('GET', '/v1/mcp-servers')).mcpServers as { slug: string }[];
  expect(tenant.map((s) => s.slug)).not.toContain(slug);
  await page.getByLabel('Servers of').selectOption('tenant');
  await expect(row(page, slug)).toHaveCount(0);
});

test('a server an integration projects is read-only here, managed by the integration', async ({ page, app, project }) => {
  const slug = `managed-${unique()}`;
  const account = await app.api('POST', '/v1/integrations', {
    provider: 'custom', label: `Tools ${slug}`, credential: `key-${unique()}`, capabilities: ['agent-tools'], projectId: project.id,
    server: { slug, url: unreachable, headerName: 'Authorization' },
  });
  try {
    await page.goto(`${app.url}/settings/mcp-servers`);
    await page.getByLabel('Servers of').selectOption('project');
    await page.getByRole('region', { name: 'MCP servers' }).getByLabel('Project').selectOption(project.id);
    await expect(row(page, slug)).toContainText(`managed by integration:${account.id}`);
    await expect(row(page, slug).getByRole('button', { name: 'Check' })).toBeVisible();
    await expect(row(page, slug).getByRole('button', { name: 'Sign in' })).toHaveCount(0);
    await expect(row(page, slug).getByRole('button', { name: 'Delete' })).toHaveCount(0);
  } finally {
    await app.api('DELETE', `/v1/integrations/${account.id}`);
  }
});

/** freePort is a port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

/** everything starts the reference MCP server over Streamable HTTP and
 *  answers its URL once it listens. */
async function everything(entry: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [entry, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  const url = `http://127.0.0.1:${port}/mcp`;
  await new Promise<void>((ok, fail) => {
    let log = '';
    const timer = setTimeout(() => fail(new Error(`the MCP server did not start: ${log}`)), 30_000);
    child.stderr!.on('data', (b: Buffer) => {
      log += b.toString();
      if (/listening on port/.test(log)) {
        clearTimeout(timer);
        ok();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the MCP server exited with ${code}: ${log}`));
    });
  });
  return { url, child };
}

test('a reachable server checks ok with its tool count', async ({ page, app }) => {
  const entry = process.env.CLOPEN_MCP_EVERYTHING;
  test.skip(!entry && process.env.CI !== 'true', 'CLOPEN_MCP_EVERYTHING names no MCP server to start');
  expect(entry, 'CLOPEN_MCP_EVERYTHING must name server-everything under CI').toBeTruthy();
  const server = await everything(entry!);
  const slug = `everything-${unique()}`;
  try {
    await page.goto(`${app.url}/settings/mcp-servers`);
    await addRemote(page, slug, server.url);
    await row(page, slug).getByRole('button', { name: 'Check' }).click();
    await expect(row(page, slug).locator('[data-state]')).toHaveText('ok');
    await expect(row(page, slug)).toContainText(/· [1-9]\d* tools?/);

    // It asks for no sign-in, so the API refuses to start one.
    const said = await refusal(app, 'POST', `/v1/mcp-servers/${slug}/oauth`, {});
    await row(page, slug).getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert')).toHaveText(said);
  } finally {
    await app.api('DELETE', `/v1/mcp-servers/${slug}`).catch(() => undefined);
    server.child.kill();
  }
});
