// What every long-running role says of the kernel at start: the log line of
// the probe (pkg/volume/linux/kernel_probe.h) and the gauge
// lustre_csi_kernel_interface{interface,since}, 1 where the kernel has the
// interface and 0 where its fallback is in use.
#ifndef LUSTRE_CSI_CMD_LUSTRE_CSI_KERNEL_REPORT_H_
#define LUSTRE_CSI_CMD_LUSTRE_CSI_KERNEL_REPORT_H_

#include "pkg/server/metrics.h"

namespace lustre_csi {

// `metrics` is borrowed.
void ReportKernel(server::MetricsRegistry* metrics);

}  // namespace lustre_csi

#endif  // LUSTRE_CSI_CMD_LUSTRE_CSI_KERNEL_REPORT_H_
