import { defineConfig } from "vite";

// Served by the gateway at /console/ (gateway/plugins/console.ts). Everything the app needs is
// bundled: no CDN, no web fonts, no inline scripts or styles (the console's CSP allows none).
export default defineConfig({
  base: "/console/",
  root: import.meta.dirname,
  // The app is written against React's API and runs on Preact's compatibility layer: the same
  // screens in half the JavaScript, which is most of a fresh load's time (root README, "Console").
  resolve: {
    alias: [
      { find: /^react-dom\/client$/, replacement: "preact/compat/client" },
      { find: /^react-dom$/, replacement: "preact/compat" },
      { find: /^react\/jsx-runtime$/, replacement: "preact/jsx-runtime" },
      { find: /^react$/, replacement: "preact/compat" },
    ],
  },
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
