#!/usr/bin/env node
// Validates every object of a multi-document YAML stream (what
// `kubectl kustomize` prints) against the Kubernetes OpenAPI schemas, with the
// model classes of the npm package kubernetes-models.
//
//   kubectl kustomize deploy/kubernetes | node tools/manifest-check/check.mjs
//   node tools/manifest-check/check.mjs rendered.yaml
//
// One line per object: "ok <apiVersion> <kind> <namespace/name>" or
// "FAIL ... : <reasons>". Exits 1 when any object fails (an unknown
// apiVersion/kind, a schema error, a field no model declares (fields.mjs),
// no metadata.name, a duplicate), 2 on bad input (unreadable, not YAML, no
// objects at all).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { unknownFields } from "./fields.mjs";
import { importFile, modulesDir, parseYamlDocuments } from "./modules.mjs";

const source = process.argv[2] ?? "-";
let text;
try {
  text = readFileSync(source === "-" ? 0 : source, "utf8");
} catch (e) {
  console.error(`manifest-check: cannot read ${source}: ${e.message}`);
  process.exit(2);
}

let objects;
try {
  objects = parseYamlDocuments(text, source);
} catch (e) {
  console.error(`manifest-check: ${e.message}`);
  process.exit(2);
}
if (objects.length === 0) {
  console.error(`manifest-check: ${source} holds no objects`);
  process.exit(2);
}

// apiVersion "v1" -> kubernetes-models/v1, "apps/v1" -> kubernetes-models/apps/v1.
async function modelClass(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") return null;
  if (!/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion)) return null;
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind)) return null;
  const rel = join("kubernetes-models", apiVersion, `${kind}.js`);
  if (!existsSync(join(modulesDir, rel))) return null;
  const cls = (await importFile(rel))[kind];
  // Only top-level resources carry apiVersion and kind (PodSpec does not).
  if (!cls || cls.apiVersion !== apiVersion || cls.kind !== kind) return null;
  return cls;
}

let failed = 0;
const seen = new Set();
for (const obj of objects) {
  const { apiVersion, kind } = obj ?? {};
  const meta = obj?.metadata ?? {};
  const id = `${apiVersion} ${kind} ${meta.namespace ? meta.namespace + "/" : ""}${meta.name ?? "<no name>"}`;
  const problems = [];
  const cls = await modelClass(apiVersion, kind);
  if (!cls) {
    problems.push("unknown apiVersion/kind (no such model in kubernetes-models)");
  } else {
    try {
      new cls(obj).validate();
    } catch (e) {
      problems.push(e.message);
    }
    problems.push(...unknownFields(obj, apiVersion, kind));
  }
  if (typeof meta.name !== "string" || meta.name === "") problems.push("no metadata.name");
  if (seen.has(id)) problems.push("duplicate object");
  seen.add(id);
  if (problems.length > 0) {
    failed++;
    console.log(`FAIL ${id}: ${problems.join("; ")}`);
  } else {
    console.log(`ok   ${id}`);
  }
}
console.log(`manifest-check: ${objects.length - failed} valid, ${failed} invalid`);
process.exit(failed > 0 ? 1 : 0);
