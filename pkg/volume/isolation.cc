#include "pkg/volume/isolation.h"

namespace lustre_csi::volume {
namespace {

class Inline : public Isolation {
 public:
  void Run(const std::function<void()>& fn) override { fn(); }
};

}  // namespace

Isolation* OnTheCallingThread() {
  static Isolation* isolation = new Inline();
  return isolation;
}

}  // namespace lustre_csi::volume
