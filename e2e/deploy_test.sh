#!/usr/bin/env bash
# Offline checks of the deployment assets in deploy/:
#   - the kustomize base and each overlay render with `kubectl kustomize`;
#   - every rendered object validates against the Kubernetes schemas
#     (tools/manifest-check, npm kubernetes-models), and a broken manifest is
#     refused;
#   - key facts of each render (host mount namespace, privileged, hostPID,
#     no host /sbin, same-path Bidirectional working directories, the example
#     overlay's name/namespace/image everywhere and the old ones nowhere), and
#     an overlay's guard refuses a base it does not expect;
#   - the systemd units pass `systemd-analyze verify`, and a broken one fails;
#   - the Nomad jobs parse as HCL2 and bind the host path they mount at;
#   - every flag used anywhere is one the built binary knows (when
#     bazel-bin/cmd/lustre-csi/lustre-csi, or $LUSTRE_CSI_BIN, exists).
# Needs kubectl, node, npm and systemd-analyze (tools/setup.sh). The npm
# dependencies are installed from the lock file into
# ~/.cache/lustre-csi/manifest-check/<lock hash> once; later runs need no
# network. Leaves nothing else behind. Extra kubectl binaries to render with
# (e.g. Debian's kubectl 1.20): DEPLOY_TEST_KUBECTLS="/path/kubectl ...".
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

work=$(mktemp -d)
step_name="start"
checks=0
finish() {
  local rc=$?
  rm -rf "$work"
  if [[ $rc -eq 0 ]]; then
    echo "deploy test: passed ($checks checks)"
  else
    echo "deploy test: FAILED in: $step_name"
  fi
  exit $rc
}
trap finish EXIT

step() {
  step_name=$1
  echo "=== $1"
}
ok() {
  checks=$((checks + 1))
  echo "  ok   $1"
}
fail() {
  echo "  FAIL $1"
  exit 1
}

step "tools"
for tool in kubectl node npm systemd-analyze; do
  command -v "$tool" >/dev/null || fail "$tool not found: run tools/setup.sh"
done
echo "  kubectl $(kubectl version --client 2>/dev/null | head -1 | sed 's/^Client Version: //'), node $(node --version), npm $(npm --version 2>/dev/null)"

step "npm dependencies of tools/manifest-check (from package-lock.json)"
tool=tools/manifest-check
MANIFEST_CHECK_NODE_MODULES=$("$tool/deps.sh") || fail "npm ci"
export MANIFEST_CHECK_NODE_MODULES
# The Nomad jobs' image has no default: given as `nomad job run` takes it.
export NOMAD_VAR_image=registry.example.com/storage/lustre-csi:v0.1.0
check_js=$repo/$tool/check.mjs
query_js=$repo/$tool/query.mjs
ok "dependencies"

# The built binary's flags, for the flag cross-check below.
bin=${LUSTRE_CSI_BIN-bazel-bin/cmd/lustre-csi/lustre-csi}
export LUSTRE_CSI_HELP_DIR=$work/help
have_help=0
if [[ -n "$bin" && -x "$bin" ]]; then
  mkdir "$LUSTRE_CSI_HELP_DIR"
  for sub in node controller plugin-manager; do
    "$bin" "$sub" --help > "$LUSTRE_CSI_HELP_DIR/$sub.txt" 2>&1 || true
  done
  have_help=1
fi

# Assertions over a file (tools/manifest-check/query.mjs), counted.
q() {
  local out rc=0
  out=$(node "$query_js" "$@") || rc=$?
  [[ -z "$out" ]] || echo "$out"
  checks=$((checks + $(grep -c '^  ok ' <<<"$out" || true)))
  return $rc
}

# Renders a kustomization with one kubectl; stderr may hold only kustomize 5's
# deprecation warnings (see the overlays' comments).
render() {
  local kubectl=$1 dir=$2 out=$3
  if ! "$kubectl" kustomize "$dir" >"$out" 2>"$out.err"; then
    cat "$out.err"
    fail "$kubectl kustomize $dir"
  fi
  if grep -v "^# Warning: '\(bases\|patchesJson6902\)' is deprecated" "$out.err" | grep -q .; then
    cat "$out.err"
    fail "$kubectl kustomize $dir printed more than the known deprecation warnings"
  fi
}

# Facts every render must have, whatever the name, namespace and image.
# $1: render file, $2: driver name, $3: namespace.
common_facts() {
  local file=$1 name=$2 ns=$3
  q "$file" <<EOF
CSIDriver named $name :: obj("CSIDriver", "$name").spec.attachRequired === false
node and controller in $ns :: obj("DaemonSet", "lustre-csi-node").metadata.namespace === "$ns" && obj("Deployment", "lustre-csi-controller").metadata.namespace === "$ns"
service accounts in $ns :: obj("ServiceAccount", "lustre-csi-node").metadata.namespace === "$ns" && obj("ServiceAccount", "lustre-csi-controller").metadata.namespace === "$ns"
provisioner binding names the controller's account in $ns :: docs.some(d => d.kind === "ClusterRoleBinding" && d.subjects.some(s => s.name === "lustre-csi-controller" && s.namespace === "$ns"))
node runs as lustre-csi-node :: obj("DaemonSet", "lustre-csi-node").spec.template.spec.serviceAccountName === "lustre-csi-node"
node account may get and patch nodes, and nothing more (the not-ready taint) :: ((b) => b !== undefined && ((r) => r !== undefined && r.rules.length === 1 && JSON.stringify(r.rules[0].resources) === '["nodes"]' && JSON.stringify([...r.rules[0].verbs].sort()) === '["get","patch"]')(obj("ClusterRole", b.roleRef.name)))(docs.find(d => d.kind === "ClusterRoleBinding" && d.subjects.some(s => s.name === "lustre-csi-node" && s.namespace === "$ns")))
node tolerates every taint, the not-ready one included :: obj("DaemonSet", "lustre-csi-node").spec.template.spec.tolerations.some(t => t.operator === "Exists" && t.key === undefined)
node removes the taint $name/agent-not-ready (the default, not turned off) :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "remove-not-ready-taint") === undefined
controller runs as lustre-csi-controller :: obj("Deployment", "lustre-csi-controller").spec.template.spec.serviceAccountName === "lustre-csi-controller"
csi-resizer on the controller's socket, online (no pod lookups) :: args(obj("Deployment", "lustre-csi-controller"), "csi-resizer")[0] === "--csi-address=/csi/csi.sock" && args(obj("Deployment", "lustre-csi-controller"), "csi-resizer").includes("--handle-volume-inuse-error=false") && container(obj("Deployment", "lustre-csi-controller"), "csi-resizer").volumeMounts.some(m => m.name === "socket-dir" && m.mountPath === "/csi")
every sidecar is granted what its release documents (sidecar-rbac.yaml) :: sidecarRbac("$repo/deploy/kubernetes/sidecar-rbac.yaml")
controller --drivername=$name :: flag(obj("Deployment", "lustre-csi-controller"), "lustre-csi", "drivername") === "$name"
node --drivername=$name :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "drivername") === "$name"
# The node: host mount namespace, privileged, nothing from the host's /sbin.
node hostPID :: obj("DaemonSet", "lustre-csi-node").spec.template.spec.hostPID === true
node privileged :: container(obj("DaemonSet", "lustre-csi-node"), "lustre-csi").securityContext.privileged === true
node --mount-namespace=/proc/1/ns/mnt :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "mount-namespace") === "/proc/1/ns/mnt"
node --mount-helper=/sbin/mount.lustre :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "mount-helper") === "/sbin/mount.lustre"
node has no --mount-command (removed) :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "mount-command") === undefined
node mounts no host /sbin :: !(obj("DaemonSet", "lustre-csi-node").spec.template.spec.volumes.some(v => /^\/s?bin/.test(v.hostPath?.path ?? "") || v.name === "host-sbin"))
node kubelet dir Bidirectional at the same path :: sameOnBothSides(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "/var/lib/kubelet")
node working dir /var/lib/kubelet/lustre-csi/$name :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "working-mount-dir") === "/var/lib/kubelet/lustre-csi/$name"
node working dir outside the socket dir volume :: !flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "working-mount-dir").startsWith(volume(obj("DaemonSet", "lustre-csi-node"), "socket-dir").hostPath.path + "/")
node working dir seen at the same path by host and container :: sameOnBothSides(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "working-mount-dir"))
node sets --lustre-client explicitly (shared) :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "lustre-client") === "shared"
node socket dir is the host's /var/lib/kubelet/plugins/$name :: volume(obj("DaemonSet", "lustre-csi-node"), "socket-dir").hostPath.path === "/var/lib/kubelet/plugins/$name" && container(obj("DaemonSet", "lustre-csi-node"), "lustre-csi").volumeMounts.some(m => m.name === "socket-dir" && m.mountPath === "/csi")
node serves /csi/csi.sock :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "endpoint") === "unix:///csi/csi.sock"
node tells the kubelet the host path of that socket :: flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "kubelet-registration-path") === "/var/lib/kubelet/plugins/$name/csi.sock"
node registration dir is the kubelet's :: volume(obj("DaemonSet", "lustre-csi-node"), "registration-dir").hostPath.path === "/var/lib/kubelet/plugins_registry" && flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "plugin-registration-dir") === "/registration"
node readiness from /readyz, liveness from /healthz :: container(obj("DaemonSet", "lustre-csi-node"), "lustre-csi").readinessProbe.httpGet.path === "/readyz" && container(obj("DaemonSet", "lustre-csi-node"), "lustre-csi").livenessProbe.httpGet.path === "/healthz"
EOF
}

# The controller of the base: never touches a file system.
plain_controller_facts() {
  q "$1" <<'EOF'
controller has no --mount-mode :: flag(obj("Deployment", "lustre-csi-controller"), "lustre-csi", "mount-mode") === undefined
controller not privileged, no hostPID :: !container(obj("Deployment", "lustre-csi-controller"), "lustre-csi").securityContext && !obj("Deployment", "lustre-csi-controller").spec.template.spec.hostPID
EOF
}

subdir_controller_facts() {
  q "$1" <<'EOF'
controller --mount-mode=lustre :: flag(obj("Deployment", "lustre-csi-controller"), "lustre-csi", "mount-mode") === "lustre"
controller --mount-namespace=/proc/1/ns/mnt :: flag(obj("Deployment", "lustre-csi-controller"), "lustre-csi", "mount-namespace") === "/proc/1/ns/mnt"
controller --working-mount-dir=/var/lib/lustre-csi/controller :: flag(obj("Deployment", "lustre-csi-controller"), "lustre-csi", "working-mount-dir") === "/var/lib/lustre-csi/controller"
controller hostPID :: obj("Deployment", "lustre-csi-controller").spec.template.spec.hostPID === true
controller privileged :: container(obj("Deployment", "lustre-csi-controller"), "lustre-csi").securityContext.privileged === true
controller working dir is a DirectoryOrCreate hostPath :: volume(obj("Deployment", "lustre-csi-controller"), "controller-work").hostPath.type === "DirectoryOrCreate"
controller working dir seen at the same path by host and container :: sameOnBothSides(obj("Deployment", "lustre-csi-controller"), "lustre-csi", "/var/lib/lustre-csi/controller")
csi-provisioner untouched :: !container(obj("Deployment", "lustre-csi-controller"), "csi-provisioner").securityContext && args(obj("Deployment", "lustre-csi-controller"), "csi-provisioner")[0] === "--csi-address=/csi/csi.sock"
csi-resizer untouched (not privileged) :: !container(obj("Deployment", "lustre-csi-controller"), "csi-resizer").securityContext
EOF
}

example_facts() {
  local file=$1 base=$2
  q "$file" <<EOF || return 1
node's host port differs from the base's (both use the host's network) :: container(obj("DaemonSet", "lustre-csi-node"), "lustre-csi").ports[0].containerPort !== 29635 && flag(obj("DaemonSet", "lustre-csi-node"), "lustre-csi", "metrics-address") === "0.0.0.0:" + container(obj("DaemonSet", "lustre-csi-node"), "lustre-csi").ports[0].containerPort
no cluster-wide name shared with the base (a second install must not take the first's) :: ((shared) => shared.length === 0 || (() => { throw new Error(shared.join(", ")); })())(clusterWideNames().filter(n => clusterWideNames("$base").includes(n)))
EOF
  q "$file" <<'EOF'
namespace lustre-csi exists, Pod Security privileged :: obj("Namespace", "lustre-csi").metadata.labels["pod-security.kubernetes.io/enforce"] === "privileged"
every namespaced object in lustre-csi :: docs.filter(d => d.metadata.namespace !== undefined && d.kind !== "CSIDriver").every(d => d.metadata.namespace === "lustre-csi")
lustre-csi containers use the example image :: container(obj("DaemonSet", "lustre-csi-node"), "lustre-csi").image === "registry.example.com/storage/lustre-csi:v0.1.0" && container(obj("Deployment", "lustre-csi-controller"), "lustre-csi").image === "registry.example.com/storage/lustre-csi:v0.1.0"
the sidecar images are untouched :: container(obj("Deployment", "lustre-csi-controller"), "csi-provisioner").image.startsWith("registry.k8s.io/sig-storage/csi-provisioner:") && container(obj("Deployment", "lustre-csi-controller"), "csi-resizer").image.startsWith("registry.k8s.io/sig-storage/csi-resizer:")
EOF
  local old
  for old in azurelustre.csi.azure.com kube-system 'image: lustre-csi:'; do
    if grep -n -- "$old" "$file"; then
      fail "example render still contains '$old'"
    fi
  done
  ok "no azurelustre.csi.azure.com, kube-system or the default image left"
}

flags_known() {
  [[ $have_help -eq 1 ]] || return 0
  q "$1" <<'EOF'
node flags known to the binary :: knownFlags("node", args(obj("DaemonSet", "lustre-csi-node"), "lustre-csi").slice(1))
controller flags known to the binary :: knownFlags("controller", args(obj("Deployment", "lustre-csi-controller"), "lustre-csi").slice(1))
EOF
}

kubectls=(kubectl)
if [[ -n "${DEPLOY_TEST_KUBECTLS:-}" ]]; then
  read -r -a extra <<<"$DEPLOY_TEST_KUBECTLS"
  kubectls+=("${extra[@]}")
fi

for i in "${!kubectls[@]}"; do
  k=${kubectls[$i]}
  tag=kubectl$i
  step "render with $k"
  render "$k" deploy/kubernetes/base "$work/$tag-base.yaml"
  render "$k" deploy/kubernetes/overlays/example "$work/$tag-example.yaml"
  render "$k" deploy/kubernetes/overlays/sub-dir-provisioning "$work/$tag-subdir.yaml"
  ok "base, example and sub-dir-provisioning render"
  render "$k" deploy/kubernetes "$work/$tag-top.yaml"
  cmp -s "$work/$tag-base.yaml" "$work/$tag-top.yaml" || fail "deploy/kubernetes and deploy/kubernetes/base render differently"
  ok "deploy/kubernetes renders the same as its base/"

  step "schema validation ($k)"
  for r in base example subdir; do
    echo "  -- $r"
    node "$check_js" "$work/$tag-$r.yaml" | sed 's/^/  /'
    [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "$r render does not validate"
    ok "$r render validates"
  done

  step "facts of the base render ($k)"
  common_facts "$work/$tag-base.yaml" azurelustre.csi.azure.com kube-system || fail "base facts"
  plain_controller_facts "$work/$tag-base.yaml" || fail "base controller facts"
  flags_known "$work/$tag-base.yaml" || fail "flags of the base"
  ok "base facts"

  step "facts of the example overlay ($k)"
  common_facts "$work/$tag-example.yaml" lustre.csi.example.com lustre-csi || fail "example facts"
  plain_controller_facts "$work/$tag-example.yaml" || fail "example controller facts"
  example_facts "$work/$tag-example.yaml" "$work/$tag-base.yaml" || fail "example facts"
  ok "example facts"

  step "facts of the sub-dir-provisioning overlay ($k)"
  common_facts "$work/$tag-subdir.yaml" azurelustre.csi.azure.com kube-system || fail "sub-dir facts"
  subdir_controller_facts "$work/$tag-subdir.yaml" || fail "sub-dir controller facts"
  flags_known "$work/$tag-subdir.yaml" || fail "flags of the sub-dir overlay"
  ok "sub-dir-provisioning facts"
done

step "the validator refuses a broken manifest"
cat >"$work/broken.yaml" <<'EOF'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: broken, namespace: kube-system}
spec:
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: broken}}
    spec:
      hostPID: "yes"
      containers:
        - name: c
          image: lustre-csi:v0.1.0
          volumeMounts: [{name: v, mountPath: /x, mountPropagaton: Bidirectional}]
---
apiVersion: storage.k8s.io/v1
kind: CSIDrivers
metadata: {name: azurelustre.csi.azure.com}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: fine, namespace: kube-system}
EOF
set +e
node "$check_js" "$work/broken.yaml" >"$work/broken.out" 2>&1
rc=$?
set -e
sed 's/^/  /' "$work/broken.out"
[[ $rc -eq 1 ]] || fail "validator exit code $rc on a broken manifest (want 1)"
grep -q '^FAIL .*DaemonSet.*hostPID must be boolean' "$work/broken.out" || fail "wrong type not reported"
grep -q '^FAIL .*DaemonSet.*unknown field .*mountPropagaton' "$work/broken.out" || fail "unknown field not reported"
grep -q '^FAIL .*CSIDrivers.*unknown apiVersion/kind' "$work/broken.out" || fail "unknown kind not reported"
grep -q '^ok .*ServiceAccount kube-system/fine' "$work/broken.out" || fail "the valid object was not passed"
ok "broken manifest refused (exit 1), each fault named"

step "an overlay refuses a base it does not expect"
cp -r deploy "$work/deploy"
sed -i 's#^            - --drivername=azurelustre.csi.azure.com#            - --drivername=other.example.com#' "$work/deploy/kubernetes/base/node.yaml"
if kubectl kustomize "$work/deploy/kubernetes/overlays/example" >/dev/null 2>"$work/guard.err"; then
  fail "example overlay rendered over a base with another --drivername"
fi
grep -q 'test' "$work/guard.err" || { cat "$work/guard.err"; fail "unexpected error"; }
ok "JSON patch test guard stops the render"

step "systemd units"
bash tools/check_systemd_units.sh | sed 's/^/  /'
[[ ${PIPESTATUS[0]} -eq 0 ]] || fail "systemd-analyze verify"
ok "systemd-analyze verify"
# The node mounts in its own mount namespace (--mount-namespace=current): no
# directive that gives the service a private one may appear.
node_unit=deploy/systemd/lustre-csi-node.service
if grep -nE '^(PrivateMounts|PrivateTmp|ProtectSystem|ProtectHome|ReadOnlyPaths|ReadWritePaths|InaccessiblePaths|TemporaryFileSystem|BindPaths|BindReadOnlyPaths|ProtectKernelTunables|ProtectKernelModules|ProtectKernelLogs|ProtectControlGroups|PrivateDevices|ProtectClock|ProtectProc|ProcSubset|RootDirectory|RootImage|MountFlags|MountAPIVFS|NetworkNamespacePath|PrivateNetwork)=' "$node_unit"; then
  fail "$node_unit gets a private mount namespace"
fi
ok "node unit stays in the host's mount namespace"
grep -q -- '--mount-namespace=current' "$node_unit" || fail "node unit without --mount-namespace=current"
grep -q -- '--nodeid=%H' "$node_unit" || fail "node unit without --nodeid=%H"
node_sock=$(grep -o -- '--endpoint=unix://[^ ]*' "$node_unit" | sed 's#--endpoint=unix://##')
grep -q -- "--plugins=[^ ]*:node:$node_sock" deploy/systemd/lustre-csi-plugin-manager.service ||
  fail "plugin manager does not use the node's socket $node_sock"
ok "node flags; the manager reaches the node at $node_sock"
if [[ $have_help -eq 1 ]]; then
  for pair in node:lustre-csi-node plugin-manager:lustre-csi-plugin-manager; do
    sub=${pair%%:*}
    unit=deploy/systemd/${pair#*:}.service
    list=$(sed -n '/^ExecStart=/,/[^\\]$/p' "$unit" | tr -d '\\' | tr -s ' \n' '\n' | grep '^--' | sed 's/.*/"&"/' | paste -sd, -)
    # knownFlags needs no document; query.mjs wants one to read.
    echo "kind: None" >"$work/none.yaml"
    q "$work/none.yaml" <<<"$sub flags of $unit known to the binary :: knownFlags(\"$sub\", [$list])" ||
      fail "flags of $unit"
  done
fi

step "a broken unit fails the check"
mkdir "$work/units"
cp deploy/systemd/*.service "$work/units/"
sed -i 's/^Restart=on-failure/Restart=sometimes/' "$work/units/lustre-csi-node.service"
if bash tools/check_systemd_units.sh "$work/units" >"$work/units.out" 2>&1; then
  cat "$work/units.out"
  fail "a unit with Restart=sometimes passed"
fi
grep -q 'Restart=\|restart specifier' "$work/units.out" || { cat "$work/units.out"; fail "unexpected output"; }
ok "Restart=sometimes refused"

step "Nomad jobs"
nomad_facts() {
  local file=$1 type=$2
  q "$file" <<EOF
the image has no default (Docker would pull a missing name from Docker Hub) :: docs[0].variable.image[0].default === undefined && task.config[0].image === process.env.NOMAD_VAR_image
one task, docker :: task.driver === "docker"
privileged :: task.config[0].privileged === true
host PID namespace (so /proc/1/ns/mnt is the host's) :: task.config[0].pid_mode === "host"
--mount-namespace=/proc/1/ns/mnt :: hclFlag("mount-namespace") === "/proc/1/ns/mnt"
--mount-helper=/sbin/mount.lustre :: hclFlag("mount-helper") === "/sbin/mount.lustre"
csi_plugin type $type, id = --drivername :: task.csi_plugin[0].type === "$type" && task.csi_plugin[0].id === hclFlag("drivername")
socket in mount_dir :: hclFlag("endpoint") === "unix://" + task.csi_plugin[0].mount_dir + "/csi.sock"
stage_publish_base_dir is the host directory Nomad binds there :: task.csi_plugin[0].stage_publish_base_dir === "/opt/nomad/data/client/csi/$type/" + task.csi_plugin[0].id
stage_publish_base_dir not inside mount_dir :: !task.csi_plugin[0].stage_publish_base_dir.startsWith(task.csi_plugin[0].mount_dir + "/")
working dir inside it (same path on both sides) :: hclFlag("working-mount-dir").startsWith(task.csi_plugin[0].stage_publish_base_dir + "/")
no --mount-command (removed) :: hclFlag("mount-command") === undefined
EOF
}
nomad_facts deploy/nomad/lustre-csi-node.nomad.hcl node || fail "node job"
q deploy/nomad/lustre-csi-node.nomad.hcl <<'EOF' || fail "node job"
system job :: Object.values(job)[0][0].type === "system"
--nodeid from the client's name :: hclFlag("nodeid") === "${node.unique.name}"
--lustre-client=shared, set explicitly :: hclFlag("lustre-client") === "shared"
memory fits the node and 8 helpers in flight (bench/node_memory_bench.sh) :: task.resources[0].memory >= 96
EOF
ok "node job"
nomad_facts deploy/nomad/lustre-csi-controller.nomad.hcl controller || fail "controller job"
q deploy/nomad/lustre-csi-controller.nomad.hcl <<'EOF' || fail "controller job"
--mount-mode=lustre :: hclFlag("mount-mode") === "lustre"
EOF
ok "controller job"
if [[ $have_help -eq 1 ]]; then
  q deploy/nomad/lustre-csi-node.nomad.hcl <<'EOF' || fail "flags of the Nomad node job"
node job flags known to the binary :: knownFlags("node", task.config[0].args.slice(1))
EOF
  q deploy/nomad/lustre-csi-controller.nomad.hcl <<'EOF' || fail "flags of the Nomad controller job"
controller job flags known to the binary :: knownFlags("controller", task.config[0].args.slice(1))
EOF
fi
sed 's/^  group "node" {$/  group "node" {{/' deploy/nomad/lustre-csi-node.nomad.hcl >"$work/broken.nomad.hcl"
if q "$work/broken.nomad.hcl" <<<"parses :: true" >"$work/hcl.out" 2>&1; then
  fail "a job with a syntax error parsed"
fi
ok "a job with a syntax error is refused: $(head -c 160 "$work/hcl.out")"

step "flags cross-checked with the binary"
if [[ $have_help -eq 1 ]]; then
  ok "every flag above is known to $bin"
else
  echo "  skipped: no executable ${bin:-(LUSTRE_CSI_BIN empty)}; flags not cross-checked"
fi
step "done"
