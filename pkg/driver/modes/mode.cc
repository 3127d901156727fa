#include "pkg/driver/modes/mode.h"

#include "pkg/driver/parameters.h"

namespace lustre_csi::driver {

std::string LustreSource::Spec() const { return MountSource(mgs_address, fs_name, sub_dir); }

}  // namespace lustre_csi::driver
