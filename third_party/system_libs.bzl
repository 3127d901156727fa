"""Repository rule wrapping Debian's static libraries as cc_library targets.

pkg-config is asked once, when the repository is fetched, for the complete
static link closure of each library; the answer becomes the `linkopts` of a
thin cc_library in the generated BUILD file, so no list of link flags is kept
by hand. Headers live in /usr/include and need no flags.

The generated repository also records where protoc and grpc_cpp_plugin are,
for the proto code-generation macro in //third_party:proto.bzl.
"""

# target name -> pkg-config modules whose static closure it links.
_PKG_CONFIG_TARGETS = {
    "grpc": ["grpc++"],
    "protobuf": ["protobuf"],
    "absl": [
        "absl_status",
        "absl_statusor",
        "absl_strings",
        "absl_str_format",
        "absl_synchronization",
        "absl_time",
        "absl_flat_hash_map",
        "absl_flat_hash_set",
        "absl_node_hash_map",
        "absl_hash",
        "absl_random_random",
        "absl_cleanup",
    ],
    "gflags": ["gflags"],
    "gtest": ["gtest"],
    "gmock": ["gmock"],
    "sqlite": ["sqlite3"],
    "yaml_cpp": ["yaml-cpp"],
    # TLS for the Kubernetes API client: the OpenSSL gRPC links already.
    "openssl": ["openssl"],
    # Header-only: JSON for the Kubernetes API client.
    "nlohmann_json": ["nlohmann_json"],
}

# glog's static archive needs libunwind, whose own _Unwind_Resume clashes with
# libgcc_eh unless libgcc_eh is named first. pkg-config does not know this, so
# this one closure is spelled out.
_GLOG_LINKOPTS = ["-lglog", "-lgflags", "-lgcc_eh", "-lunwind", "-llzma", "-lpthread"]

def _run(ctx, args):
    result = ctx.execute(args)
    if result.return_code != 0:
        fail("system_libs: `%s` failed (exit %d): %s" %
             (" ".join(args), result.return_code, result.stderr))
    return result.stdout.strip()

def _pkg_config(ctx, pkg_config, flag, modules):
    out = _run(ctx, [pkg_config, "--static", flag] + modules)
    return [f for f in out.replace("\n", " ").split(" ") if f]

def _defines(ctx, cflags):
    defines = []
    for flag in cflags:
        if flag.startswith("-D"):
            defines.append(flag[2:])
        elif flag.startswith("-I/usr/include"):
            continue
        else:
            fail("system_libs: unexpected compile flag from pkg-config: " + flag)
    return defines

def _library(name, linkopts, defines = [], deps = [], testonly = False):
    lines = ["cc_library("]
    lines.append("    name = %r," % name)
    lines.append("    linkopts = %r," % linkopts)
    if defines:
        lines.append("    defines = %r," % defines)
    if deps:
        lines.append("    deps = %r," % deps)
    if testonly:
        lines.append("    testonly = True,")
    lines.append(")")
    return "\n".join(lines) + "\n"

def _system_libs_impl(ctx):
    pkg_config = ctx.which("pkg-config")
    if not pkg_config:
        fail("system_libs: pkg-config not found; run tools/setup.sh")
    protoc = ctx.which("protoc")
    grpc_plugin = ctx.which("grpc_cpp_plugin")
    if not protoc or not grpc_plugin:
        fail("system_libs: protoc or grpc_cpp_plugin not found; run tools/setup.sh")

    build = ['package(default_visibility = ["//visibility:public"])\n']
    for name, modules in _PKG_CONFIG_TARGETS.items():
        linkopts = _pkg_config(ctx, str(pkg_config), "--libs", modules)
        defines = _defines(ctx, _pkg_config(ctx, str(pkg_config), "--cflags", modules))
        build.append(_library(
            name,
            linkopts,
            defines = defines,
            testonly = name in ("gtest", "gmock"),
        ))
    build.append(_library("glog", _GLOG_LINKOPTS))
    # Boost.Beast and Asio are header-only (Boost.System too, since 1.69);
    # their TLS stream needs OpenSSL.
    build.append(_library("boost_beast", ["-pthread"], deps = [":openssl"]))
    ctx.file("BUILD", "\n".join(build))
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("tools.bzl", "PROTOC = %r\nGRPC_CPP_PLUGIN = %r\n" % (str(protoc), str(grpc_plugin)))

system_libs = repository_rule(
    implementation = _system_libs_impl,
    environ = ["PATH", "PKG_CONFIG_PATH"],
    local = True,
)
