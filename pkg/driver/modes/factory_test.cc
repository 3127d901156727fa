// The modes by name: each is made from the flags' values, checks what it
// needs, and only the modes with file systems give the controller a way in.
#include "pkg/driver/modes/factory.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pkg/volume/testing/fake_mount_namespace.h"
#include "pkg/volume/testing/fake_syscalls.h"

namespace lustre_csi::driver {
namespace {

using ::testing::HasSubstr;

TEST(FactoryTest, EveryModeByName) {
  EXPECT_EQ(ModeNames(), "lustre, local or mock");
  EXPECT_EQ(FindMode("nfs"), nullptr);
  EXPECT_EQ(FindMode(""), nullptr);
  volume::FakeSyscalls sys;
  ASSERT_TRUE(sys.AddDir("/srv/lustrefs").ok());
  volume::FakeMountNamespace ns(&sys);
  ModeEnv env;
  env.sys = &sys;
  env.ns = &ns;
  env.local_root = "/srv";
  for (const char* name : {"lustre", "local", "mock"}) {
    const ModeSpec* spec = FindMode(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_STREQ(spec->name, name);
    EXPECT_TRUE(spec->check(env).ok()) << name;
    ModeInstance made = spec->make(env);
    ASSERT_NE(made.mode, nullptr) << name;
    // Mock mode has no file system for the controller to work in.
    EXPECT_EQ(made.file_systems == nullptr, std::string(name) == "mock") << name;
  }
  EXPECT_TRUE(FindMode("lustre")->lustre_client);
  EXPECT_FALSE(FindMode("local")->lustre_client);
  EXPECT_FALSE(FindMode("mock")->lustre_client);
}

TEST(FactoryTest, LocalModeNeedsItsRoot) {
  ModeEnv env;
  absl::Status s = FindMode("local")->check(env);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--local-root"));
}

// The local mode made by the factory reaches its root: a publish binds from
// <local-root>/<fs>, and the controller's way in is that directory.
TEST(FactoryTest, TheModeMadeIsTheOneNamed) {
  volume::FakeSyscalls sys;
  sys.SetAtomicBinds(true);
  ASSERT_TRUE(sys.AddDir("/srv/lustrefs/vol").ok());
  ASSERT_TRUE(sys.AddDir("/pods/a").ok());
  ModeEnv env;
  env.sys = &sys;
  env.local_root = "/srv";
  ModeInstance local = FindMode("local")->make(env);
  std::string root_seen;
  ASSERT_TRUE(local.file_systems
                  ->WithFileSystemRoot({"10.0.0.4", "lustrefs", ""},
                                       [&](volume::Syscalls&, const std::string& root) {
                                         root_seen = root;
                                         return absl::OkStatus();
                                       })
                  .ok());
  EXPECT_EQ(root_seen, "/srv/lustrefs");
  ASSERT_TRUE(local.mode->Publish({{"10.0.0.4", "lustrefs", "vol"}, "/pods/a", {}, false}).ok());
  absl::StatusOr<bool> published = local.mode->IsPublished("/pods/a");
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_TRUE(*published);
  ModeInstance mock = FindMode("mock")->make(env);
  ASSERT_TRUE(sys.AddDir("/pods/b").ok());
  ASSERT_TRUE(mock.mode->Publish({{"10.0.0.4", "lustrefs", "vol"}, "/pods/b", {}, false}).ok());
  EXPECT_EQ(sys.MountCount(), 1) << "mock mode mounted something";
}

}  // namespace
}  // namespace lustre_csi::driver
