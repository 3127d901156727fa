#!/usr/bin/env node
// Asserts facts about a rendered manifest or a Nomad job file, for tests.
//
//   node query.mjs <file.yaml|file.hcl> < assertions
//
// Each assertion line is "<description> :: <JavaScript expression>"; blank
// lines and lines starting with # are skipped. A line passes when the
// expression is truthy; an exception fails it and its message is shown.
// Prints "ok"/"FAIL" per line; exits 1 when any fails, 2 on bad input.
//
// The expression sees, for YAML (every document of the file):
//   docs                    the objects
//   obj(kind, name)         the one object of that kind and name
//   container(o, name)      a container of a workload by name
//   args(o, name)           that container's args
//   flag(o, name, flag)     the value of --flag=value in those args (undefined if absent)
//   volume(o, name)         a pod volume by name
//   sameOnBothSides(o, name, path)
//                           path lies under a Bidirectional mount of that container
//                           whose hostPath volume has the same path on the host
// and for .hcl (parsed with HashiCorp's HCL2 parser, @cdktf/hcl2json):
//   docs[0]                 the file as JSON
//   job                     the job with ${var.*} (NOMAD_VAR_* or defaults) and ${local.*} filled in
//   task                    the job's only task
//   hclFlag(name)           the value of --name=value in the task's args
// and always:
//   text                    the file's raw text
//   sidecarRbac(listFile)   throws naming every grant a listed sidecar needs
//                           and the render does not give (sidecar-rbac.yaml)
//   clusterWideNames([file]) "Kind/name" of every object without a namespace
//                           (but Namespaces), of this render or of `file`
//   knownFlags(sub, list)   throws naming every --flag of the list that
//                           `lustre-csi <sub> --help` (saved as
//                           $LUSTRE_CSI_HELP_DIR/<sub>.txt) does not list
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadNomadJob, parseYamlDocuments } from "./modules.mjs";

const file = process.argv[2];
if (!file) {
  console.error("usage: query.mjs <file.yaml|file.hcl> < assertions");
  process.exit(2);
}
const text = readFileSync(file, "utf8");
const isHcl = file.endsWith(".hcl");
let docs;
let job;
let task;
try {
  if (isHcl) {
    const nomad = await loadNomadJob(file, text);
    docs = [nomad.raw];
    job = nomad.job;
    task = nomad.tasks.length === 1 ? nomad.tasks[0] : undefined;
  } else {
    docs = parseYamlDocuments(text, file);
  }
} catch (e) {
  console.error(`query: cannot parse ${file}: ${e.message ?? e}`);
  process.exit(2);
}

function obj(kind, name) {
  const found = docs.filter((d) => d?.kind === kind && d?.metadata?.name === name);
  if (found.length !== 1) throw new Error(`${found.length} objects ${kind}/${name}`);
  return found[0];
}
function podSpec(o) {
  return o.spec?.template?.spec ?? o.spec;
}
function container(o, name) {
  const c = (podSpec(o).containers ?? []).find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name} in ${o.kind}/${o.metadata?.name}`);
  return c;
}
function args(o, name) {
  return container(o, name).args ?? [];
}
function flagIn(list, name) {
  const prefix = `--${name}=`;
  const hits = list.filter((a) => a.startsWith(prefix));
  if (hits.length > 1) throw new Error(`--${name} given ${hits.length} times`);
  return hits.length === 1 ? hits[0].slice(prefix.length) : undefined;
}
function flag(o, name, f) {
  return flagIn(args(o, name), f);
}
function volume(o, name) {
  const v = (podSpec(o).volumes ?? []).find((x) => x.name === name);
  if (!v) throw new Error(`no volume ${name} in ${o.kind}/${o.metadata?.name}`);
  return v;
}
function under(path, dir) {
  return typeof path === "string" && (path === dir || path.startsWith(dir.replace(/\/$/, "") + "/"));
}
function sameOnBothSides(o, name, path) {
  return (container(o, name).volumeMounts ?? []).some((m) => {
    if (m.mountPropagation !== "Bidirectional" || !under(path, m.mountPath)) return false;
    const v = volume(o, m.name);
    return v.hostPath?.path === m.mountPath;
  });
}

// Whether the render grants `verb` on `resource` of `apiGroup` to the
// ServiceAccount `account` of namespace `ns`: cluster-wide (a
// ClusterRoleBinding) or, with `inNamespace`, in that namespace (a
// RoleBinding there, to a Role or ClusterRole).
function granted(account, ns, apiGroup, resource, verb, inNamespace) {
  const bound = (b) =>
    (b.subjects ?? []).some((s) => s.kind === "ServiceAccount" && s.name === account && s.namespace === ns);
  const roles = [];
  for (const b of docs.filter((d) => d?.kind === "ClusterRoleBinding" && bound(d))) {
    roles.push(...docs.filter((d) => d?.kind === "ClusterRole" && d.metadata.name === b.roleRef.name));
  }
  if (inNamespace) {
    for (const b of docs.filter((d) => d?.kind === "RoleBinding" && d.metadata.namespace === ns && bound(d))) {
      roles.push(
        ...docs.filter(
          (d) =>
            d?.metadata?.name === b.roleRef.name &&
            ((b.roleRef.kind === "ClusterRole" && d.kind === "ClusterRole") ||
              (b.roleRef.kind === "Role" && d.kind === "Role" && d.metadata.namespace === ns)),
        ),
      );
    }
  }
  const has = (list, x) => (list ?? []).includes(x) || (list ?? []).includes("*");
  return roles.some((r) =>
    (r.rules ?? []).some((rule) => has(rule.apiGroups, apiGroup) && has(rule.resources, resource) && has(rule.verbs, verb)),
  );
}

// Throws naming every grant that the sidecars listed in `listFile` (see
// deploy/kubernetes/sidecar-rbac.yaml) need and the render does not give
// their workload's ServiceAccount, or a sidecar whose image differs.
function sidecarRbac(listFile) {
  const list = parseYamlDocuments(readFileSync(listFile, "utf8"), listFile)[0];
  const missing = [];
  for (const s of list.sidecars) {
    const w = obj(s.workload.kind, s.workload.name);
    const image = container(w, s.container).image;
    if (image !== s.image) missing.push(`${s.container} runs ${image}, the list is for ${s.image}`);
    const account = podSpec(w).serviceAccountName;
    const ns = w.metadata.namespace;
    for (const [rules, inNamespace] of [[s.clusterRules ?? [], false], [s.namespacedRules ?? [], true]]) {
      for (const r of rules) {
        for (const verb of r.verbs) {
          if (!granted(account, ns, r.apiGroup, r.resource, verb, inNamespace)) {
            missing.push(`${verb} ${r.apiGroup || "core"}/${r.resource}${inNamespace ? ` in ${ns}` : ""}`);
          }
        }
      }
    }
  }
  if (missing.length > 0) throw new Error(`not granted: ${missing.join("; ")}`);
  return true;
}

// Cluster-wide objects (no namespace) of this render, or of the render in
// `otherFile`: "Kind/name".
function clusterWideNames(otherFile) {
  const of = otherFile ? parseYamlDocuments(readFileSync(otherFile, "utf8"), otherFile) : docs;
  return of
    .filter((d) => d?.metadata && d.metadata.namespace === undefined && d.kind !== "Namespace")
    .map((d) => `${d.kind}/${d.metadata.name}`);
}

function hclFlag(name) {
  return flagIn(task.config[0].args, name);
}

function knownFlags(sub, list) {
  const dir = process.env.LUSTRE_CSI_HELP_DIR;
  const helpFile = dir ? join(dir, `${sub}.txt`) : "";
  if (!dir || !existsSync(helpFile)) throw new Error(`no help text ${helpFile || "(LUSTRE_CSI_HELP_DIR unset)"}`);
  const known = new Set();
  for (const line of readFileSync(helpFile, "utf8").split("\n")) {
    const m = /^\s+--([a-z0-9][a-z0-9_-]*)/.exec(line);
    if (m) known.add(m[1].replace(/_/g, "-"));
  }
  const unknown = list
    .filter((a) => a.startsWith("--"))
    .map((a) => a.slice(2).split("=")[0])
    .filter((n) => !known.has(n.replace(/_/g, "-")));
  if (unknown.length > 0) throw new Error(`lustre-csi ${sub} does not know --${unknown.join(", --")}`);
  return true;
}

const lines = readFileSync(0, "utf8").split("\n");
let failed = 0;
for (const raw of lines) {
  const line = raw.trim();
  if (line === "" || line.startsWith("#")) continue;
  const sep = line.indexOf(" :: ");
  if (sep < 0) {
    console.error(`query: assertion without " :: ": ${line}`);
    process.exit(2);
  }
  const what = line.slice(0, sep);
  const expr = line.slice(sep + 4);
  let ok = false;
  let why = "false";
  try {
    const fn = new Function(
      "docs", "obj", "container", "args", "flag", "volume", "sameOnBothSides",
      "job", "task", "hclFlag", "text", "knownFlags", "sidecarRbac", "clusterWideNames",
      `return (${expr});`,
    );
    ok = Boolean(
      fn(docs, obj, container, args, flag, volume, sameOnBothSides, job, task, hclFlag, text, knownFlags,
        sidecarRbac, clusterWideNames),
    );
  } catch (e) {
    why = e.message;
  }
  if (ok) {
    console.log(`  ok   ${what}`);
  } else {
    failed++;
    console.log(`  FAIL ${what}  [${expr} -> ${why}]`);
  }
}
process.exit(failed > 0 ? 1 : 0);
