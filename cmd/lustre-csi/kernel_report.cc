#include "cmd/lustre-csi/kernel_report.h"

#include <glog/logging.h>

#include "pkg/volume/kernel.h"
#include "pkg/volume/linux/kernel_probe.h"

namespace lustre_csi {

void ReportKernel(server::MetricsRegistry* metrics) {
  const volume::KernelInterfaces& kernel = volume::os::Kernel();
  LOG(INFO) << kernel.Describe();
  server::Gauge* gauge = metrics->AddGauge(
      "lustre_csi_kernel_interface",
      "1 when the kernel has the interface, 0 when its fallback is in use", {"interface", "since"});
  for (const volume::KernelInterfaces::Entry& e : kernel.Entries()) {
    gauge->Set({e.name, e.since}, e.present ? 1 : 0);
  }
}

}  // namespace lustre_csi
