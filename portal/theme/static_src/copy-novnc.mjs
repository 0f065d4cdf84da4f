// The browser console's noVNC (npm @novnc/novnc, ES modules): copied beside the built CSS, so that the
// portal serves it as its own static files (never from a CDN). Run by `npm run build` (make install).
import { cpSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "node_modules", "@novnc", "novnc");
const target = join(here, "..", "static", "novnc");
rmSync(target, { recursive: true, force: true });
for (const part of ["core", "vendor", "LICENSE.txt", "AUTHORS"]) {
  // With the package's own times: newer files would look like sources changed since the CSS was built.
  cpSync(join(source, part), join(target, part), { recursive: true, preserveTimestamps: true });
}
