// Where the npm dependencies live: $MANIFEST_CHECK_NODE_MODULES (the test
// installs them outside the work tree), else node_modules beside this file.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const modulesDir =
  process.env.MANIFEST_CHECK_NODE_MODULES ||
  join(dirname(fileURLToPath(import.meta.url)), "node_modules");

if (!existsSync(join(modulesDir, "kubernetes-models"))) {
  console.error(`manifest-check: no dependencies in ${modulesDir}; run npm ci (see README.md)`);
  process.exit(2);
}

// CommonJS packages (yaml, @cdktf/hcl2json).
export const requireDep = createRequire(join(modulesDir, "_"));

// An ES module file inside a package, by path (kubernetes-models is ESM only).
export function importFile(relPath) {
  return import(pathToFileURL(join(modulesDir, relPath)).href);
}

// Every YAML document of a text, as plain objects (empty documents dropped).
export function parseYamlDocuments(text, source) {
  const YAML = requireDep("yaml");
  const docs = YAML.parseAllDocuments(text, { prettyErrors: true });
  const out = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      throw new Error(`${source}: YAML error: ${doc.errors[0].message}`);
    }
    const value = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}
