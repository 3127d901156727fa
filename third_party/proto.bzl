"""C++ code generation for gRPC services with the system protoc.

grpc_cc_proto_library(name, src) runs protoc and grpc_cpp_plugin on one .proto
file and wraps the generated code in a cc_library called `name`. The gMock
stubs (`<stem>_mock.grpc.pb.h`) are exported by a second, testonly library
called `name + "_mock"`.
"""

load("@system_libs//:tools.bzl", "GRPC_CPP_PLUGIN", "PROTOC")

def grpc_cc_proto_library(name, src, proto_deps = [], deps = [], visibility = None):
    stem = src[:-len(".proto")]
    pkg = native.package_name()
    outs = [
        stem + ".pb.h",
        stem + ".pb.cc",
        stem + ".grpc.pb.h",
        stem + ".grpc.pb.cc",
        stem + "_mock.grpc.pb.h",
    ]
    native.genrule(
        name = name + "_gen",
        srcs = [src] + proto_deps,
        outs = outs,
        cmd = " ".join([
            PROTOC,
            "-I.",
            "-I/usr/include",
            "--cpp_out=$(BINDIR)",
            "--grpc_out=generate_mock_code=true:$(BINDIR)",
            "--plugin=protoc-gen-grpc=" + GRPC_CPP_PLUGIN,
            "%s/%s" % (pkg, src) if pkg else src,
        ]),
    )
    native.cc_library(
        name = name,
        srcs = [stem + ".pb.cc", stem + ".grpc.pb.cc"],
        hdrs = [stem + ".pb.h", stem + ".grpc.pb.h"],
        deps = deps + [
            "//third_party:grpc",
            "//third_party:protobuf",
        ],
        visibility = visibility,
    )
    native.cc_library(
        name = name + "_mock",
        testonly = True,
        hdrs = [stem + "_mock.grpc.pb.h"],
        deps = [
            ":" + name,
            "//third_party:gmock",
        ],
        visibility = visibility,
    )
