/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// The build goes into the gateway's package, which embeds it (go:embed): the
// committed build is what `go run ./cmd/clopen dev` serves at /. CI builds
// again from source into a scratch directory (CLOPEN_WEB_OUT) and fails when
// the two differ, so the build must be reproducible: content-hashed names, no
// timestamps, no absolute paths.
const outDir = process.env.CLOPEN_WEB_OUT ?? '../services/gateway/internal/webui/dist';

// During `npm run dev`, API and WebSocket requests go to a running
// `clopen dev` (CLOPEN_URL, default its address).
const api = process.env.CLOPEN_URL ?? 'http://127.0.0.1:8420';

export default defineConfig({
  plugins: [svelte()],
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 400,
  },
  server: {
    proxy: {
      '/v1': { target: api, ws: true, changeOrigin: false },
      '/openapi.json': api,
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
