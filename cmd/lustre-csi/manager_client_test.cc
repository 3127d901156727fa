#include "cmd/lustre-csi/manager_client.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/manager.grpc.pb.h"

namespace lustre_csi::manager_client {
namespace {

namespace pb = ::lustre_csi::manager::v1;
using ::testing::HasSubstr;

// The manager API with canned answers; remembers the requests it got.
class FakeManager : public pb::PluginManager::Service {
 public:
  grpc::Status ListPlugins(grpc::ServerContext*, const pb::ListPluginsRequest* req,
                           pb::ListPluginsResponse* res) override {
    list_request = *req;
    pb::Plugin* p = res->add_plugins();
    p->set_name("azurelustre.csi.azure.com");
    p->set_type(pb::PLUGIN_TYPE_NODE);
    p->set_healthy(true);
    p->set_node_id("node-7");
    p->set_vendor_version("0.3.0");
    p->add_node_capabilities("GET_VOLUME_STATS");
    p->set_endpoint("/csi/csi.sock");
    return grpc::Status::OK;
  }
  grpc::Status MountVolume(grpc::ServerContext*, const pb::MountVolumeRequest* req,
                           pb::MountVolumeResponse* res) override {
    mount_request = *req;
    if (mount_error.has_value()) return *mount_error;
    res->mutable_mount()->set_target("/mounts/p/per-alloc/a1/vol-1/rw");
    res->mutable_mount()->set_source("/mounts/p/staging/default/vol-1/rw");
    res->mutable_mount()->set_staged(true);
    return grpc::Status::OK;
  }
  grpc::Status Drain(grpc::ServerContext*, const pb::DrainRequest*,
                     pb::DrainResponse* res) override {
    res->set_unmounted(2);
    res->add_errors("vol-9: device busy");
    return grpc::Status::OK;
  }

  pb::ListPluginsRequest list_request;
  pb::MountVolumeRequest mount_request;
  std::optional<grpc::Status> mount_error;
};

class ManagerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_->Shutdown(); }

  int Run(const std::string& verb, const std::vector<std::string>& args,
          const Options& options = {}) {
    out_.str("");
    err_.str("");
    return RunVerb(verb, args, options, server_->InProcessChannel(grpc::ChannelArguments()),
                   {out_, err_});
  }

  FakeManager fake_;
  std::unique_ptr<grpc::Server> server_;
  std::ostringstream out_, err_;
};

TEST_F(ManagerClientTest, PluginsPrintsATableOrJson) {
  ASSERT_EQ(Run("plugins", {}), cli::kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "NAME                       TYPE  HEALTHY  NODE-ID  VERSION  NODE-CAPABILITIES  "
            "ENDPOINT       REASON\n"
            "azurelustre.csi.azure.com  node  yes      node-7   0.3.0    GET_VOLUME_STATS   "
            "/csi/csi.sock  -\n");
  EXPECT_EQ(fake_.list_request.type(), pb::PLUGIN_TYPE_UNSPECIFIED);  // no filter unless asked

  Options options;
  options.json = true;
  options.type = "monolith";
  ASSERT_EQ(Run("plugins", {}, options), cli::kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("\"name\": \"azurelustre.csi.azure.com\""));
  EXPECT_EQ(fake_.list_request.type(), pb::PLUGIN_TYPE_MONOLITH);
}

TEST_F(ManagerClientTest, MountBuildsTheRequestFromArgumentsAndOptions) {
  Options options;
  options.read_only = true;
  options.access_mode = "single-node-writer";
  options.volume_context = "mgs-ip-address=10.0.0.4,fs-name=lustrefs";
  options.mount_flags = "noatime,flock";
  ASSERT_EQ(Run("mount", {"p.csi.io", "vol-1", "a1"}, options), cli::kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "mounted /mounts/p/per-alloc/a1/vol-1/rw (staged at "
            "/mounts/p/staging/default/vol-1/rw)\n");
  const pb::MountVolumeRequest& req = fake_.mount_request;
  EXPECT_EQ(req.plugin(), "p.csi.io");
  EXPECT_EQ(req.namespace_(), "default");
  EXPECT_EQ(req.volume_id(), "vol-1");
  EXPECT_EQ(req.remote_id(), "vol-1");  // the volume id when not given
  EXPECT_EQ(req.alloc_id(), "a1");
  EXPECT_TRUE(req.usage().read_only());
  EXPECT_EQ(req.usage().access_mode(), pb::ACCESS_MODE_SINGLE_NODE_WRITER);
  EXPECT_EQ(req.usage().attachment_mode(), pb::ATTACHMENT_MODE_FILE_SYSTEM);
  EXPECT_THAT(req.usage().mount_flags(), ::testing::ElementsAre("noatime", "flock"));
  EXPECT_EQ(req.volume_context().at("fs-name"), "lustrefs");
}

TEST_F(ManagerClientTest, ErrorsCarryTheCodeAndExitOne) {
  fake_.mount_error = grpc::Status(grpc::NOT_FOUND, "plugin p.csi.io is not registered");
  EXPECT_EQ(Run("mount", {"p.csi.io", "vol-1", "a1"}), cli::kExitFailure);
  EXPECT_EQ(err_.str(),
            "lustre-csi plugin-manager mount: NOT_FOUND: plugin p.csi.io is not registered\n");
  EXPECT_EQ(out_.str(), "");
}

TEST_F(ManagerClientTest, BadUseExitsTwoWithoutCalling) {
  EXPECT_EQ(Run("mount", {"p.csi.io", "vol-1"}), cli::kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("usage: lustre-csi plugin-manager mount <plugin>"));
  EXPECT_EQ(fake_.mount_request.plugin(), "");
  EXPECT_EQ(Run("frobnicate", {}), cli::kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown verb 'frobnicate'"));
  Options bad;
  bad.access_mode = "everyone";
  EXPECT_EQ(Run("mount", {"p.csi.io", "vol-1", "a1"}, bad), cli::kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("INVALID_ARGUMENT: unknown access mode \"everyone\""));
  EXPECT_EQ(fake_.mount_request.plugin(), "");
}

TEST_F(ManagerClientTest, DrainWithErrorsSaysSoAndExitsOne) {
  EXPECT_EQ(Run("drain", {}), cli::kExitFailure);
  EXPECT_EQ(out_.str(), "unmounted 2 claim(s)\nerror: vol-9: device busy\n");
}

TEST_F(ManagerClientTest, UnimplementedVerbOnTheServerIsReported) {
  // The fake does not implement ListClaims: the client reports the code.
  EXPECT_EQ(Run("claims", {}), cli::kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("lustre-csi plugin-manager claims: UNIMPLEMENTED"));
}

}  // namespace
}  // namespace lustre_csi::manager_client
