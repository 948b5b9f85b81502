import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

export default {
  preprocess: vitePreprocess(),
  compilerOptions: {
    // Components are compiled with runes; the CSS goes into the built
    // stylesheet, never into <style> elements (the CSP allows only 'self').
    runes: true,
    css: 'external',
  },
};
