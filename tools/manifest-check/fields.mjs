// Unknown-field check. The Kubernetes OpenAPI schemas do not forbid extra
// fields, so kubernetes-models' validate() accepts a typo such as `hostPid`
// (the API server would drop it, or refuse it under strict field validation).
// This reads the field names and field types that kubernetes-models declares
// for each model in its TypeScript declarations (*.d.ts) and reports every
// field of an object that its model does not declare. Maps (labels,
// annotations, ...) and free-form values are not looked into.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { modulesDir } from "./modules.mjs";

const cache = new Map();

// The interface a .d.ts file declares: { open, fields: Map(name -> {ref, array}) }
// with ref the .d.ts file of the field's model (null for leaves), or null
// when the file declares no interface (a type alias such as Quantity).
function loadModel(dtsPath) {
  if (cache.has(dtsPath)) return cache.get(dtsPath);
  let model = null;
  if (existsSync(dtsPath)) {
    const lines = readFileSync(dtsPath, "utf8").split("\n");
    const imports = new Map();
    for (const line of lines) {
      const m = /^import \{ ([^}]+) \} from "([^"]+)";$/.exec(line);
      if (m) for (const name of m[1].split(",")) imports.set(name.trim(), m[2]);
    }
    const start = lines.findIndex((l) => /^export interface \w+/.test(l));
    if (start >= 0) {
      model = { open: false, fields: new Map() };
      for (let i = start + 1; i < lines.length && lines[i] !== "}"; i++) {
        const line = lines[i];
        if (/^ {4}\[key: string\]/.test(line)) model.open = true;
        const m = /^ {4}"([^"]+)"\??: (.*?);?$/.exec(line);
        if (!m) continue;
        let type = m[2];
        let array = false;
        const a = /^Array<(.*)>$/.exec(type);
        if (a) {
          array = true;
          type = a[1];
        }
        let ref = null;
        if (/^I\w+$/.test(type) && imports.has(type)) {
          const spec = imports.get(type);
          ref = spec.startsWith(".")
            ? join(dirname(dtsPath), spec.replace(/\.js$/, ".d.ts"))
            : join(modulesDir, `${spec}.d.ts`);
        }
        model.fields.set(m[1], { ref, array });
      }
    }
  }
  cache.set(dtsPath, model);
  return model;
}

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function walk(value, dtsPath, path, out) {
  const model = loadModel(dtsPath);
  if (!model || model.open || !isPlainObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    const field = model.fields.get(key);
    if (!field) {
      out.push(`unknown field ${path}/${key}`);
      continue;
    }
    if (!field.ref) continue;
    if (field.array && Array.isArray(child)) {
      child.forEach((item, i) => walk(item, field.ref, `${path}/${key}/${i}`, out));
    } else if (!field.array) {
      walk(child, field.ref, `${path}/${key}`, out);
    }
  }
}

// Unknown fields of a top-level object whose model is
// kubernetes-models/<apiVersion>/<kind>.d.ts.
// A model whose declarations cannot be read is an error, not a pass: a
// change of the package's declaration format must not silence the check.
export function unknownFields(obj, apiVersion, kind) {
  const top = join(modulesDir, "kubernetes-models", apiVersion, `${kind}.d.ts`);
  const model = loadModel(top);
  if (!model || model.fields.size === 0) return [`cannot read the field names of ${kind} from ${top}`];
  const out = [];
  walk(obj, top, "data", out);
  return out;
}
