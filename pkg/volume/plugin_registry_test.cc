#include "pkg/volume/plugin_registry.h"

#include <functional>

#include "gtest/gtest.h"

namespace lustre_csi::volume {
namespace {

class TestPlugin : public VolumePlugin {
 public:
  TestPlugin(std::string name, std::function<bool(const VolumeSpec&)> can)
      : name_(std::move(name)), can_(std::move(can)) {}
  std::string Name() const override { return name_; }
  bool CanSupport(const VolumeSpec& spec) const override { return can_(spec); }

 private:
  std::string name_;
  std::function<bool(const VolumeSpec&)> can_;
};

std::unique_ptr<VolumePlugin> ForDriver(std::string name, std::string driver) {
  return std::make_unique<TestPlugin>(std::move(name),
                                      [driver](const VolumeSpec& s) { return s.driver == driver; });
}

TEST(PluginRegistryTest, RegisterAndFindByName) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.Register(ForDriver("lustre", "azurelustre.csi.azure.com")).ok());
  ASSERT_TRUE(reg.Register(ForDriver("bind", "local")).ok());
  absl::StatusOr<VolumePlugin*> p = reg.FindByName("lustre");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->Name(), "lustre");
  EXPECT_EQ(reg.FindByName("nfs").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reg.Names(), (std::vector<std::string>{"bind", "lustre"}));
}

TEST(PluginRegistryTest, RegistrationErrors) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.Register(ForDriver("lustre", "a")).ok());
  EXPECT_EQ(reg.Register(ForDriver("lustre", "b")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(reg.Register(ForDriver("", "b")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reg.Register(nullptr).code(), absl::StatusCode::kInvalidArgument);
  // The first registration stands.
  VolumeSpec spec;
  spec.driver = "a";
  EXPECT_TRUE(reg.FindBySpec(spec).ok());
}

struct SpecCase {
  const char* name;
  std::string driver;
  absl::StatusCode code;
  std::string plugin;
};

class FindBySpecTest : public testing::TestWithParam<SpecCase> {};

TEST_P(FindBySpecTest, Table) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.Register(ForDriver("lustre", "azurelustre.csi.azure.com")).ok());
  ASSERT_TRUE(reg.Register(ForDriver("bind", "local")).ok());
  ASSERT_TRUE(reg.Register(ForDriver("bind-too", "local")).ok());
  VolumeSpec spec;
  spec.name = "pv-1";
  spec.driver = GetParam().driver;
  absl::StatusOr<VolumePlugin*> p = reg.FindBySpec(spec);
  EXPECT_EQ(p.status().code(), GetParam().code) << p.status();
  if (p.ok()) {
    EXPECT_EQ((*p)->Name(), GetParam().plugin);
  }
  if (GetParam().code == absl::StatusCode::kFailedPrecondition) {
    EXPECT_NE(p.status().message().find("bind, bind-too"), std::string::npos) << p.status();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, FindBySpecTest,
    testing::Values(SpecCase{"One", "azurelustre.csi.azure.com", absl::StatusCode::kOk, "lustre"},
                    SpecCase{"None", "nfs", absl::StatusCode::kNotFound, ""},
                    SpecCase{"Ambiguous", "local", absl::StatusCode::kFailedPrecondition, ""}),
    [](const testing::TestParamInfo<SpecCase>& info) { return info.param.name; });

TEST(PluginRegistryTest, EmptyRegistry) {
  PluginRegistry reg;
  EXPECT_EQ(reg.FindBySpec(VolumeSpec{}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(reg.Names().empty());
}

}  // namespace
}  // namespace lustre_csi::volume
