#include "pkg/server/grpc_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "proto/health.grpc.pb.h"
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

// GetInfo that holds the call until the test releases it.
class HeldRegistration final : public pluginregistration::Registration::Service {
 public:
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    entered.Notify();
    release.WaitForNotification();
    info->set_name("held.csi.io");
    return grpc::Status::OK;
  }
  absl::Notification entered, release;
};

TEST_F(UnixGrpcServerTest, ShutdownLetsTheCallInFlightFinish) {
  HeldRegistration held;
  auto server = UnixGrpcServer::Start(path_, {&held});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->InFlight(), 0);

  grpc::Status call_status;
  pluginregistration::PluginInfo info;
  std::thread call([&] {
    auto stub = pluginregistration::Registration::NewStub(Channel());
    grpc::ClientContext ctx;
    call_status = stub->GetInfo(&ctx, {}, &info);
  });
  held.entered.WaitForNotification();
  EXPECT_EQ((*server)->InFlight(), 1);

  std::thread shutdown([&] { (*server)->Shutdown(absl::Hours(1)); });
  // Once the shutdown has begun, new calls are refused while the held one
  // goes on.
  std::string health;
  while (HealthCheck(&health).ok()) {
  }
  EXPECT_EQ((*server)->InFlight(), 1);

  held.release.Notify();
  call.join();
  shutdown.join();
  EXPECT_TRUE(call_status.ok()) << call_status.error_message();
  EXPECT_EQ(info.name(), "held.csi.io");
  EXPECT_EQ((*server)->InFlight(), 0);
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "socket file left behind";
}

TEST_F(UnixGrpcServerTest, ShutdownCancelsWhatOutlivesTheGracePeriod) {
  HeldRegistration held;
  auto server = UnixGrpcServer::Start(path_, {&held});
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::Status call_status;
  std::thread call([&] {
    auto stub = pluginregistration::Registration::NewStub(Channel());
    grpc::ClientContext ctx;
    pluginregistration::PluginInfo info;
    call_status = stub->GetInfo(&ctx, {}, &info);
  });
  held.entered.WaitForNotification();
  // The handler cannot be interrupted; the client is told at once, with a
  // code that invites a retry.
  std::thread shutdown([&] { (*server)->Shutdown(absl::ZeroDuration()); });
  call.join();
  EXPECT_EQ(call_status.error_code(), grpc::StatusCode::UNAVAILABLE) << call_status.error_message();
  held.release.Notify();
  shutdown.join();
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "socket file left behind";
}

// A client that keeps its connection open and reads nothing must not hold
// up the shutdown: with no call in flight, Shutdown returns without waiting
// for that client, however long the grace period. The client here speaks
// just enough HTTP/2 (the connection preface and an empty SETTINGS frame) for
// the server to take the connection, then never reads, so it never answers
// the server's closing handshake. The test bounds its own wait so that a
// regression fails instead of hanging.
TEST_F(UnixGrpcServerTest, IdleConnectionDoesNotHoldUpShutdown) {
  auto server = UnixGrpcServer::Start(path_, {&service_});
  ASSERT_TRUE(server.ok()) << server.status();
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  std::string hello(kPreface, sizeof(kPreface) - 1);
  hello += std::string("\0\0\0\x04\0\0\0\0\0", 9);  // SETTINGS, empty
  ASSERT_EQ(write(fd, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  // The server has taken the connection once it answers with its SETTINGS.
  char first;
  ASSERT_EQ(read(fd, &first, 1), 1);

  absl::Notification done;
  std::thread shutdown([&] {
    (*server)->Shutdown(absl::Hours(1));
    done.Notify();
  });
  bool returned = done.WaitForNotificationWithTimeout(absl::Seconds(5));
  EXPECT_TRUE(returned) << "Shutdown still waiting for a client that reads nothing";
  if (!returned) close(fd);  // let it finish
  shutdown.join();
  if (returned) close(fd);
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "socket file left behind";
}

TEST_F(UnixGrpcServerTest, HealthWatchFollowsTheStatusUntilShutdown) {
  auto server = UnixGrpcServer::Start(path_, {&service_});
  ASSERT_TRUE(server.ok()) << server.status();
  auto health = grpc::health::v1::Health::NewStub(Channel());
  grpc::health::v1::HealthCheckRequest other;
  other.set_service("no.such.Service");
  grpc::health::v1::HealthCheckResponse checked;
  grpc::ClientContext check_ctx;
  EXPECT_EQ(health->Check(&check_ctx, other, &checked).error_code(), grpc::StatusCode::NOT_FOUND);

  grpc::ClientContext ctx;
  auto watch = health->Watch(&ctx, grpc::health::v1::HealthCheckRequest());
  grpc::health::v1::HealthCheckResponse seen;
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  (*server)->SetServing(false);
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  (*server)->SetServing(true);
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  // Shutdown ends the watch (it does not wait out the grace period for it).
  std::thread shutdown([&] { (*server)->Shutdown(absl::Hours(1)); });
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_FALSE(watch->Read(&seen));
  shutdown.join();
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "socket file left behind";
}

}  // namespace
}  // namespace lustre_csi::server
