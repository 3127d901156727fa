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

// A Nomad job file parsed with HashiCorp's HCL2 parser: `raw` as the parser
// gives it, `job` with ${var.x} and ${local.x} filled in, `tasks` every task
// of it. A variable's value comes, as with `nomad job run`, from the
// environment's NOMAD_VAR_<name> or else its default; one with neither is an
// error where it is used. Runtime interpolations such as ${node.unique.name}
// are left alone.
export async function loadNomadJob(file, text) {
  const { parse } = requireDep("@cdktf/hcl2json");
  const raw = await parse(file, text);
  const vars = {};
  for (const [k, v] of Object.entries(raw.variable ?? {})) {
    vars[k] = process.env[`NOMAD_VAR_${k}`] ?? v[0].default;
  }
  const locals = {};
  const fill = (s) =>
    s.replace(/\$\{(var|local)\.(\w+)\}/g, (m, kind, name) => {
      const table = kind === "var" ? vars : locals;
      if (!(name in table) || table[name] === undefined) throw new Error(`${file}: cannot resolve ${m}`);
      return String(table[name]);
    });
  for (const block of raw.locals ?? []) for (const [k, v] of Object.entries(block)) locals[k] = fill(v);
  const walk = (v) =>
    typeof v === "string"
      ? fill(v)
      : Array.isArray(v)
        ? v.map(walk)
        : v && typeof v === "object"
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
          : v;
  const job = walk(raw.job ?? {});
  const tasks = [];
  for (const jobs of Object.values(job))
    for (const j of jobs)
      for (const groups of Object.values(j.group ?? {}))
        for (const g of groups)
          for (const [name, ts] of Object.entries(g.task ?? {})) for (const t of ts) tasks.push({ name, ...t });
  return { raw, job, tasks };
}
