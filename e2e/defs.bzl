"""e2e_test: an e2e cc_test, and the same test on emulated older kernels."""

# The kernels the suites also run on (e2e/older-kernel): the RHEL 8 base
# (4.18), Ubuntu 20.04 (5.4), and the last one without mount_setattr (5.11).
OLDER_KERNELS = ["4.18", "5.4", "5.11"]

def e2e_test(name, kernels = [], **kwargs):
    """A cc_test, plus <name>_linux_<version> for each of `kernels`.

    Each extra test runs the same cases with every start of the binary under
    e2e/older-kernel (--kernel=<version>, read by e2e_main).
    """
    native.cc_test(name = name, **kwargs)
    for kernel in kernels:
        extra = dict(kwargs)
        extra["data"] = kwargs.get("data", []) + ["//e2e:older-kernel"]
        extra["args"] = kwargs.get("args", []) + ["--kernel=" + kernel]
        native.cc_test(name = name + "_linux_" + kernel.replace(".", "_"), **extra)
