import { defineConfig } from "vite";

// Served by the gateway at /console/ (gateway/plugins/console.ts). Everything the app needs is
// bundled: no CDN, no web fonts, no inline scripts or styles (the console's CSP allows none).
export default defineConfig({
  base: "/console/",
  root: import.meta.dirname,
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 600,
    modulePreload: { polyfill: false },
    rollupOptions: {
      // React Query marks its modules "use client" for server frameworks; meaningless here.
      onwarn(warning, warn) {
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
    },
  },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
