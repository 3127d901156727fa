"""Writes the stamped build facts into a C++ source file.

Reads STABLE_GIT_COMMIT and STABLE_BUILD_DATE from Bazel's stable status file
(filled by tools/workspace_status.sh under --stamp) and the driver version from
the VERSION file. Only stable keys are read, so the output changes only when
the commit does and two builds of one commit are bit-identical.
"""

def _build_info_cc_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".cc")
    ctx.actions.run_shell(
        inputs = [ctx.info_file, ctx.file.version_file],
        outputs = [out],
        arguments = [ctx.info_file.path, ctx.file.version_file.path, out.path],
        command = """
set -eu
status="$1"; version_file="$2"; out="$3"
key() { sed -n "s/^$1 //p" "$status" | head -n 1; }
commit=$(key STABLE_GIT_COMMIT); date=$(key STABLE_BUILD_DATE)
version=$(head -n 1 "$version_file" | tr -d '[:space:]')
: "${commit:=unknown}" "${date:=1970-01-01T00:00:00Z}"
for v in "$commit" "$date" "$version"; do
  case "$v" in *[!A-Za-z0-9.:+_-]*|"") echo "build_info: bad stamp value '$v'" >&2; exit 1;; esac
done
cat > "$out" <<CC
// Generated from the build status and VERSION; do not edit.
namespace lustre_csi::version::stamp {
extern const char kGitCommit[] = "$commit";
extern const char kBuildDate[] = "$date";
extern const char kDriverVersion[] = "$version";
}  // namespace lustre_csi::version::stamp
CC
""",
        mnemonic = "BuildInfo",
    )
    return [DefaultInfo(files = depset([out]))]

build_info_cc = rule(
    implementation = _build_info_cc_impl,
    attrs = {
        "version_file": attr.label(allow_single_file = True, mandatory = True),
    },
)
