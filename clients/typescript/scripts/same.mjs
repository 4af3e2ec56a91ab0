// Fails when the committed generated types differ from a fresh generation from docs/openapi.json.
import { readFileSync, rmSync } from "node:fs";

const [committed, fresh] = process.argv.slice(2);
const same = readFileSync(committed, "utf8") === readFileSync(fresh, "utf8");
rmSync(fresh);
if (!same) {
  console.error(`${committed} is stale: docs/openapi.json changed. Run \`npm run generate\` and commit it.`);
  process.exit(1);
}
console.log(`${committed} matches docs/openapi.json`);
