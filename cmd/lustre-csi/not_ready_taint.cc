#include "cmd/lustre-csi/not_ready_taint.h"

#include <glog/logging.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "pkg/base/cancel.h"
#include "pkg/base/clock.h"
#include "pkg/kube/https_client.h"
#include "pkg/kube/in_cluster.h"
#include "pkg/kube/taint_remover.h"

namespace lustre_csi {
namespace {

class Running : public NotReadyTaint {
 public:
  Running(const kube::InClusterConfig& config, kube::TaintRemoverOptions options,
          std::function<bool()> ready) {
    kube::HttpsClientOptions https;
    https.host = config.host;
    https.port = config.port;
    https.ca_file = config.ca_file;
    // Bounds how long stopping can wait for a call in flight.
    https.timeout = absl::Seconds(10);
    http_ = kube::NewHttpsClient(https);
    const std::string token_file = config.token_file;
    remover_ = std::make_unique<kube::TaintRemover>(
        std::move(options), http_.get(), [token_file] { return kube::ReadToken(token_file); },
        std::move(ready), base::RealClock());
    thread_ = std::thread([this] { remover_->Run(&cancel_).IgnoreError(); });
  }
  ~Running() override {
    cancel_.Cancel();
    thread_.join();
  }

 private:
  std::unique_ptr<kube::HttpClient> http_;
  std::unique_ptr<kube::TaintRemover> remover_;
  base::CancelToken cancel_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<NotReadyTaint> StartNotReadyTaintRemoval(bool enabled,
                                                         const std::string& driver_name,
                                                         const std::string& node_name,
                                                         const std::string& service_account_dir,
                                                         std::function<bool()> ready) {
  const std::string key = kube::NotReadyTaintKey(driver_name);
  if (!enabled) {
    LOG(INFO) << "--remove-not-ready-taint=false: taint " << key << " is left alone";
    return nullptr;
  }
  absl::StatusOr<kube::InClusterConfig> config = kube::InClusterConfigFrom(
      [](const char* name) {
        const char* v = std::getenv(name);
        return std::string(v == nullptr ? "" : v);
      },
      [](const std::string& path) { return std::ifstream(path).is_open(); }, service_account_dir);
  if (!config.ok()) {
    LOG(INFO) << "not removing taint " << key << ": " << config.status().message();
    return nullptr;
  }
  LOG(INFO) << "will remove taint " << key << " from node " << node_name << " through the API "
            << "server at " << config->Authority() << " once this node plugin is ready";
  kube::TaintRemoverOptions options;
  options.node_name = node_name;
  options.taint_key = key;
  return std::make_unique<Running>(*config, std::move(options), std::move(ready));
}

}  // namespace lustre_csi
