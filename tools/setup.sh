#!/usr/bin/env bash
# Installs every Debian package the project needs, at pinned versions.
# Safe to re-run: when everything is already installed at the pinned version it
# does nothing and needs no network.
set -euo pipefail

# package=version, one per line. Bump deliberately, all together.
PACKAGES=(
  bazel-bootstrap=4.2.3+ds-9
  g++=4:12.2.0-3
  pkg-config=1.8.1-1
  libgrpc++-dev=1.51.1-3+b1
  protobuf-compiler-grpc=1.51.1-3+b1
  libprotobuf-dev=3.21.12-3+deb12u1
  protobuf-compiler=3.21.12-3+deb12u1
  libabsl-dev=20220623.1-1+deb12u2
  libgoogle-glog-dev=0.6.0-2
  libgflags-dev=2.2.2-2
  libgtest-dev=1.12.1-0.2
  libgmock-dev=1.12.1-0.2
  libsqlite3-dev=3.40.1-2+deb12u2
  libyaml-cpp-dev=0.7.0+dfsg-8+b1
  libunwind-dev=1.6.2-3
  liblzma-dev=5.4.1-1+deb12u2
  clang-format=1:14.0-55.7~deb12u1
  buildah=1.28.2+ds1-3+deb12u1+b3
  umoci=0.4.7+ds-3+b7
  podman=4.3.1+ds1-8+deb12u1+b3
  containerd=1.6.20~ds1-1+deb12u3
  runc=1.1.5+ds1-1+deb12u1
  containernetworking-plugins=1.1.1+ds1-3+b5
  jq=1.6-2.1+deb12u3
  strace=6.1-0.1
  util-linux=2.38.1-5+deb12u3
  file=1:5.44-3
  gnuplot-nox=5.4.4+dfsg1-2+b2
  libboost1.81-dev=1.81.0-5+deb12u1
  nlohmann-json3-dev=3.11.2-2
  openssl=3.0.19-1~deb12u2
  bindfs=1.14.7-1
  fuse3=3.14.0-4
)

# Installed only when the command is missing: a machine image may bring its
# own build (here kubectl 1:528.0.0-0 and Node.js 20 from vendor repositories),
# which is then used as it is. e2e/deploy_test.sh needs all four; Debian's
# kubectl 1.20 (kustomize 2.0.3) renders deploy/kubernetes* as well.
IF_MISSING=(
  kubectl:kubernetes-client=1.20.5+really1.20.2-1.1+deb12u1
  node:nodejs=18.20.4+dfsg-1~deb12u3
  npm:npm=9.2.0~ds1-1
  systemd-analyze:systemd=252.39-1~deb12u2
)
for entry in "${IF_MISSING[@]}"; do
  command -v "${entry%%:*}" >/dev/null 2>&1 || PACKAGES+=("${entry#*:}")
done

missing=()
for spec in "${PACKAGES[@]}"; do
  name=${spec%%=*}
  want=${spec#*=}
  have=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)
  if [[ "$have" != "install ok installed $want" ]]; then
    missing+=("$spec")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#PACKAGES[@]} packages present at pinned versions"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends --allow-downgrades "${missing[@]}"
echo "setup: done"
