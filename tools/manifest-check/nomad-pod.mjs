#!/usr/bin/env node
// Renders the CSI plugin task of a Nomad job as the container a Nomad client
// with the docker driver would start, written as a Kubernetes Pod (YAML) so
// that the pod-level e2e runs it with the same container runtime as the
// Kubernetes manifests.
//
//   node nomad-pod.mjs <job.hcl> <client state_dir> <node name> <alloc id>
//
// What the client does, and what the Pod says for it:
//   - the task's docker `args` go to the image's entrypoint: container args;
//     ${node.unique.name} and ${NOMAD_*} are filled in, anything else that
//     only a running cluster knows is an error;
//   - `privileged` → securityContext.privileged; `pid_mode = "host"` →
//     hostPID; `network_mode = "host"` → hostNetwork;
//   - csi_plugin: the client binds <state_dir>/csi/plugins/<alloc id> at
//     `mount_dir` and <state_dir>/csi/<type>/<plugin id> at
//     `stage_publish_base_dir` (default /local/csi), both with bidirectional
//     propagation, and the host's /dev at /dev; it sets CSI_ENDPOINT to
//     unix://<mount_dir>/csi.sock;
//   - the task directories /alloc, /local and /secrets come from
//     <alloc_dir>/<alloc id>, where alloc_dir is <state_dir>/../alloc.
// The Pod's name is the task's name; its one container has that name too.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { loadNomadJob, requireDep } from "./modules.mjs";

const [file, stateDir, nodeName, allocId] = process.argv.slice(2);
if (!file || !stateDir?.startsWith("/") || !nodeName || !allocId) {
  console.error("usage: nomad-pod.mjs <job.hcl> <client state_dir> <node name> <alloc id>");
  process.exit(2);
}

function die(message) {
  console.error(`nomad-pod: ${file}: ${message}`);
  process.exit(1);
}

let nomad;
try {
  nomad = await loadNomadJob(file, readFileSync(file, "utf8"));
} catch (e) {
  die(e.message ?? String(e));
}
const plugins = nomad.tasks.filter((t) => t.csi_plugin);
if (plugins.length !== 1) die(`${plugins.length} tasks with a csi_plugin block, want 1`);
const task = plugins[0];
if (task.driver !== "docker") die(`task ${task.name} uses driver ${task.driver}, not docker`);
const config = task.config?.[0] ?? {};
const csi = task.csi_plugin[0];
const mountDir = csi.mount_dir ?? "/csi";
const stageDir = csi.stage_publish_base_dir ?? "/local/csi";
const allocDir = join(dirname(stateDir), "alloc", allocId);

const env = {
  NOMAD_ALLOC_ID: allocId,
  NOMAD_TASK_NAME: task.name,
  NOMAD_ALLOC_DIR: "/alloc",
  NOMAD_TASK_DIR: "/local",
  NOMAD_SECRETS_DIR: "/secrets",
  CSI_ENDPOINT: `unix://${mountDir}/csi.sock`,
};
const runtime = { "node.unique.name": nodeName };
const has = (table, name) => Object.prototype.hasOwnProperty.call(table, name);
const fill = (s) =>
  s.replace(/\$\{([^}]+)\}/g, (m, name) => {
    if (has(runtime, name)) return runtime[name];
    if (has(env, name)) return env[name];
    die(`cannot fill ${m}: known here are ${[...Object.keys(runtime), ...Object.keys(env)].join(", ")}`);
  });
for (const [name, value] of Object.entries(task.env?.[0] ?? {})) env[name] = fill(String(value));
for (const key of ["entrypoint", "command"]) {
  if (config[key] !== undefined) die(`the docker ${key} is not modelled here; the image's entrypoint runs`);
}

const volumes = [];
const volumeMounts = [];
function bind(name, hostPath, mountPath, propagation) {
  volumes.push({ name, hostPath: { path: hostPath, type: "DirectoryOrCreate" } });
  volumeMounts.push({ name, mountPath, ...(propagation ? { mountPropagation: propagation } : {}) });
}
bind("alloc", join(allocDir, "alloc"), "/alloc");
bind("local", join(allocDir, task.name, "local"), "/local");
bind("secrets", join(allocDir, task.name, "secrets"), "/secrets");
bind("csi-socket-dir", join(stateDir, "csi", "plugins", allocId), mountDir, "Bidirectional");
bind("csi-stage-publish", join(stateDir, "csi", csi.type, csi.id), stageDir, "Bidirectional");
bind("dev", "/dev", "/dev");

const pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: task.name },
  spec: {
    hostPID: config.pid_mode === "host",
    hostNetwork: config.network_mode === "host",
    containers: [
      {
        name: task.name,
        image: fill(String(config.image ?? "")),
        args: (config.args ?? []).map((a) => fill(String(a))),
        env: Object.entries(env).map(([name, value]) => ({ name, value: String(value) })),
        securityContext: { privileged: config.privileged === true },
        volumeMounts,
      },
    ],
    volumes,
  },
};
const YAML = requireDep("yaml");
process.stdout.write(YAML.stringify(pod));
