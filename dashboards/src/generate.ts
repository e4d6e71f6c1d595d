// Writes the dashboards' JSON into dashboards/ (npm run dashboards). Commit the result: CI fails when the
// committed files differ from what this would write.
import { writeFile } from 'node:fs/promises';
import { renderDashboards } from './render.ts';

const OUTPUT_DIR = new URL('../', import.meta.url);

for (const [file, text] of renderDashboards()) {
  await writeFile(new URL(file, OUTPUT_DIR), text);
}
