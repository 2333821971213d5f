// Builds the console into dist/ with fixed file names (no content hashes), so the api can
// embed dist/ into its binary and CI can rebuild and diff it against the checked-in copy.
import { defineConfig, type Plugin } from "vite";

/** The policy the built index.html carries. The api sends it as a header too, with
 * `connect-src` narrowed to 'self' and the OIDC issuers the console logs in through
 * (configured at the api, unknown here: both policies apply, so the header's list is
 * what holds), plus `frame-ancestors 'none'`. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src *",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "object-src 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

/** Adds the Content-Security-Policy meta element to the built page only: the dev server
 * injects styles inline, which the policy forbids. */
function cspMeta(): Plugin {
  return {
    name: "berth-csp-meta",
    apply: "build",
    transformIndexHtml: {
      order: "post",
      handler: (html) =>
        html.replace(
          '<meta charset="utf-8" />',
          `<meta charset="utf-8" />\n    <meta http-equiv="Content-Security-Policy" content="${CSP}" />`,
        ),
    },
  };
}

export default defineConfig({
  base: "/",
  plugins: [cspMeta()],
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  server: {
    // `BERTH_URL=http://127.0.0.1:8080 npm run dev` proxies the api for development.
    proxy: process.env.BERTH_URL
      ? { "/v1": { target: process.env.BERTH_URL, changeOrigin: true } }
      : undefined,
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    cssCodeSplit: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    rolldownOptions: {
      output: {
        entryFileNames: "assets/app.js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: (asset) =>
          asset.names.some((n) => n.endsWith(".css")) ? "assets/app.css" : "assets/[name][extname]",
      },
    },
  },
});
