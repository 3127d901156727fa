#include "pkg/server/grpc_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "proto/pluginregistration.grpc.pb.h"

namespace lustre_csi::server {
namespace {

class Registration final : public pluginregistration::Registration::Service {
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_name("test.csi.io");
    return grpc::Status::OK;
  }
};

class UnixGrpcServerTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/grpc_server_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/csi.sock";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }

  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel("unix:" + path_, grpc::InsecureChannelCredentials());
  }

  // grpc.health.v1.Health/Check with an empty request, through a generic stub;
  // returns the raw HealthCheckResponse bytes.
  grpc::Status HealthCheck(std::string* response) {
    grpc::GenericStub stub(Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::ByteBuffer request, reply;
    grpc::Slice empty("", 0);
    request = grpc::ByteBuffer(&empty, 1);
    grpc::Status status;
    absl::Notification done;
    stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &reply,
                   [&](grpc::Status s) {
                     status = s;
                     done.Notify();
                   });
    done.WaitForNotification();
    std::vector<grpc::Slice> slices;
    reply.Dump(&slices);
    response->clear();
    for (const grpc::Slice& s : slices) {
      response->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    return status;
  }

  std::string dir_, path_;
  Registration service_;
};

TEST_F(UnixGrpcServerTest, ServesOwnerOnlySocketWithHealthAndRemovesItOnShutdown) {
  auto server = UnixGrpcServer::Start(path_, {&service_});
  ASSERT_TRUE(server.ok()) << server.status();

  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto stub = pluginregistration::Registration::NewStub(Channel());
  grpc::ClientContext ctx;
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(stub->GetInfo(&ctx, {}, &info).ok());
  EXPECT_EQ(info.name(), "test.csi.io");

  std::string health;
  ASSERT_TRUE(HealthCheck(&health).ok());
  EXPECT_EQ(health, std::string("\x08\x01", 2));  // status: SERVING
  (*server)->SetServing(false);
  ASSERT_TRUE(HealthCheck(&health).ok());
  EXPECT_EQ(health, std::string("\x08\x02", 2));  // status: NOT_SERVING

  (*server)->Shutdown(absl::Seconds(1));
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "socket file left behind";
}

// grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo with a
// list_services request (field 7, empty string), through a raw streaming
// call; the answer lists the service names.
TEST_F(UnixGrpcServerTest, ServesReflection) {
  auto server = UnixGrpcServer::Start(path_, {&service_});
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::GenericStub stub(Channel());
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call =
      stub.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag;
  bool ok;
  auto step = [&](intptr_t want) {
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
    return ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(step(1));
  grpc::Slice request_slice(std::string("\x3a\x00", 2));
  grpc::ByteBuffer request(&request_slice, 1);
  call->Write(request, reinterpret_cast<void*>(2));
  ASSERT_TRUE(step(2));
  grpc::ByteBuffer reply;
  call->Read(&reply, reinterpret_cast<void*>(3));
  ASSERT_TRUE(step(3));
  std::vector<grpc::Slice> slices;
  reply.Dump(&slices);
  std::string bytes;
  for (const grpc::Slice& sl : slices)
    bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  EXPECT_NE(bytes.find("pluginregistration.Registration"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
  call->WritesDone(reinterpret_cast<void*>(4));
  step(4);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  step(5);
  EXPECT_TRUE(status.ok()) << status.error_message();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

TEST_F(UnixGrpcServerTest, SecondServerOnLiveSocketIsRefused) {
  auto first = UnixGrpcServer::Start(path_, {&service_});
  ASSERT_TRUE(first.ok()) << first.status();
  Registration other;
  auto second = UnixGrpcServer::Start(path_, {&other});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  // The first still serves.
  auto stub = pluginregistration::Registration::NewStub(Channel());
  grpc::ClientContext ctx;
  pluginregistration::PluginInfo info;
  EXPECT_TRUE(stub->GetInfo(&ctx, {}, &info).ok());
}

TEST_F(UnixGrpcServerTest, OversizedRequestIsResourceExhausted) {
  GrpcServerOptions options;
  options.max_receive_message_bytes = 1024;
  auto server = UnixGrpcServer::Start(path_, {&service_}, options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = pluginregistration::Registration::NewStub(Channel());
  grpc::ClientContext ctx;
  pluginregistration::RegistrationStatus big;
  big.set_error(std::string(4096, 'x'));
  pluginregistration::RegistrationStatusResponse reply;
  EXPECT_EQ(stub->NotifyRegistrationStatus(&ctx, big, &reply).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

}  // namespace
}  // namespace lustre_csi::server
