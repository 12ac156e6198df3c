// Build of the admin UI: the server embeds `dist/` and serves it under /admin/.
// `SEPP_ADMIN_PROXY` (e.g. http://127.0.0.1:9465) makes the dev server forward API calls to a
// running server's admin listener while iterating on the UI.
import { defineConfig } from 'vitest/config'
import vue from '@vitejs/plugin-vue'

const proxyTarget = process.env.SEPP_ADMIN_PROXY

export default defineConfig({
  base: '/admin/',
  plugins: [vue()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
  server: proxyTarget
    ? { proxy: { '/admin/api': { target: proxyTarget, changeOrigin: false } } }
    : undefined,
  test: { include: ['src/**/*.test.ts'] },
})
