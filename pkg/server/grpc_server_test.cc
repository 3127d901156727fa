#include "pkg/server/grpc_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "pkg/base/wait_until.h"
#include "proto/health.grpc.pb.h"
#include "proto/pluginregistration.grpc.pb.h"
#include "proto/reflection.grpc.pb.h"

namespace lustre_csi::server {
namespace {

using pluginregistration::Registration;

class TestRegistration final : public Registration::Service {
 public:
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_name("test.csi.io");
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus*,
                                        pluginregistration::RegistrationStatusResponse*) override {
    return grpc::Status::OK;
  }
};

// Both methods of `service`: GetInfo where `get_info` says, and
// NotifyRegistrationStatus inline.
template <typename Impl>
Routes RegistrationRoutes(Impl* service, Dispatch get_info = Dispatch::kInline) {
  Routes routes;
  routes.Unary(Registration::service_full_name(), "GetInfo", service, &Impl::GetInfo, get_info);
  routes.Unary(Registration::service_full_name(), "NotifyRegistrationStatus", service,
               &Impl::NotifyRegistrationStatus, Dispatch::kInline);
  return routes;
}

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
    for (const char* name : {"/reg.sock", "/other.sock"}) unlink((dir_ + name).c_str());
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
  TestRegistration service_;
};

TEST_F(UnixGrpcServerTest, ServesOwnerOnlySocketWithHealthAndRemovesItOnShutdown) {
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(server.ok()) << server.status();

  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto stub = Registration::NewStub(Channel());
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

// One server on two sockets: both serve, both are 0600; closing one removes
// its file and the other goes on; Shutdown removes what is left.
TEST_F(UnixGrpcServerTest, ServesEverySocketAndClosesOneOnRequest) {
  std::string second = dir_ + "/reg.sock";
  auto server = UnixGrpcServer::Start({path_, second}, RegistrationRoutes(&service_));
  ASSERT_TRUE(server.ok()) << server.status();
  for (const std::string& path : {path_, second}) {
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << path;
    auto stub = Registration::NewStub(
        grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    pluginregistration::PluginInfo info;
    ASSERT_TRUE(stub->GetInfo(&ctx, {}, &info).ok()) << path;
    EXPECT_EQ(info.name(), "test.csi.io");
  }
  (*server)->CloseSocket(second);
  EXPECT_NE(access(second.c_str(), F_OK), 0) << "closed socket still there";
  auto stub = Registration::NewStub(Channel());
  grpc::ClientContext ctx;
  pluginregistration::PluginInfo info;
  EXPECT_TRUE(stub->GetInfo(&ctx, {}, &info).ok());
  (*server)->Shutdown(absl::Seconds(1));
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "socket file left behind";
}

// A live socket among several fails the start and leaves the others as they
// were.
TEST_F(UnixGrpcServerTest, LiveSocketAmongSeveralFailsTheStart) {
  auto first = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(first.ok()) << first.status();
  std::string other = dir_ + "/other.sock";
  TestRegistration service;
  auto second = UnixGrpcServer::Start({other, path_}, RegistrationRoutes(&service));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(access(other.c_str(), F_OK), 0) << "a socket for a server that did not start";
  auto stub = Registration::NewStub(Channel());
  grpc::ClientContext ctx;
  pluginregistration::PluginInfo info;
  EXPECT_TRUE(stub->GetInfo(&ctx, {}, &info).ok());
}

TEST_F(UnixGrpcServerTest, SecondServerOnLiveSocketIsRefused) {
  auto first = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(first.ok()) << first.status();
  TestRegistration other;
  auto second = UnixGrpcServer::Start(path_, RegistrationRoutes(&other));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  // The first still serves.
  auto stub = Registration::NewStub(Channel());
  grpc::ClientContext ctx;
  pluginregistration::PluginInfo info;
  EXPECT_TRUE(stub->GetInfo(&ctx, {}, &info).ok());
}

TEST_F(UnixGrpcServerTest, OversizedRequestIsResourceExhausted) {
  GrpcServerOptions options;
  options.max_receive_message_bytes = 1024;
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_), options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = Registration::NewStub(Channel());
  grpc::ClientContext ctx;
  pluginregistration::RegistrationStatus big;
  big.set_error(std::string(4096, 'x'));
  pluginregistration::RegistrationStatusResponse reply;
  EXPECT_EQ(stub->NotifyRegistrationStatus(&ctx, big, &reply).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}

// GetInfo that holds the call until the test releases it.
class HeldRegistration final : public Registration::Service {
 public:
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    entered.Notify();
    release.WaitForNotification();
    info->set_name("held.csi.io");
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus*,
                                        pluginregistration::RegistrationStatusResponse*) override {
    ++notified;
    return grpc::Status::OK;
  }
  absl::Notification entered, release;
  std::atomic<int> notified{0};
};

// A handler that blocks on a worker holds up neither the polling thread nor
// the inline calls behind it.
TEST_F(UnixGrpcServerTest, BlockedWorkerCallDoesNotHoldUpInlineCalls) {
  HeldRegistration held;
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&held, Dispatch::kWorker));
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::Status held_status;
  std::thread call([&] {
    auto stub = Registration::NewStub(Channel());
    grpc::ClientContext ctx;
    pluginregistration::PluginInfo info;
    held_status = stub->GetInfo(&ctx, {}, &info);
  });
  held.entered.WaitForNotification();
  auto stub = Registration::NewStub(Channel());
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pluginregistration::RegistrationStatusResponse reply;
    EXPECT_TRUE(stub->NotifyRegistrationStatus(&ctx, {}, &reply).ok());
  }
  EXPECT_EQ(held.notified.load(), 20);
  std::string health;
  EXPECT_TRUE(HealthCheck(&health).ok());
  // Only the held call is left once the answered ones are let go.
  EXPECT_TRUE(base::WaitUntil([&] { return (*server)->InFlight() == 1; }, absl::Seconds(10)))
      << (*server)->InFlight();
  held.release.Notify();
  call.join();
  EXPECT_TRUE(held_status.ok()) << held_status.error_message();
}

TEST_F(UnixGrpcServerTest, UnroutedMethodIsUnimplemented) {
  Routes routes;
  routes.Unary(Registration::service_full_name(), "GetInfo", &service_, &TestRegistration::GetInfo,
               Dispatch::kInline);
  auto server = UnixGrpcServer::Start(path_, routes);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = Registration::NewStub(Channel());
  grpc::ClientContext ctx;
  pluginregistration::RegistrationStatusResponse reply;
  grpc::Status status = stub->NotifyRegistrationStatus(&ctx, {}, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << status.error_message();
  EXPECT_TRUE(base::WaitUntil([&] { return (*server)->InFlight() == 0; }, absl::Seconds(10)))
      << (*server)->InFlight();
}

TEST_F(UnixGrpcServerTest, MalformedRouteTableIsRefused) {
  Routes routes;
  routes.Unary(Registration::service_full_name(), "NoSuchMethod", &service_,
               &TestRegistration::GetInfo, Dispatch::kInline);
  auto server = UnixGrpcServer::Start(path_, routes);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "a socket for a server that did not start";
}

// A request that is not the method's message is refused, and the server goes
// on serving.
TEST_F(UnixGrpcServerTest, UnparsableRequestIsRefused) {
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::GenericStub stub(Channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice junk(std::string("\xff\xff\xff", 3));
  grpc::ByteBuffer request(&junk, 1), reply;
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(&ctx, "/pluginregistration.Registration/GetInfo", grpc::StubOptions(), &request,
                 &reply, [&](grpc::Status s) {
                   status = s;
                   done.Notify();
                 });
  done.WaitForNotification();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL) << status.error_message();
  auto typed = Registration::NewStub(Channel());
  grpc::ClientContext ctx2;
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(typed->GetInfo(&ctx2, {}, &info).ok());
  EXPECT_EQ(info.name(), "test.csi.io");
}

TEST_F(UnixGrpcServerTest, ShutdownLetsTheCallInFlightFinish) {
  HeldRegistration held;
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&held, Dispatch::kWorker));
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->InFlight(), 0);

  grpc::Status call_status;
  pluginregistration::PluginInfo info;
  std::thread call([&] {
    auto stub = Registration::NewStub(Channel());
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
  EXPECT_TRUE(base::WaitUntil([&] { return (*server)->InFlight() == 1; }, absl::Seconds(10)))
      << (*server)->InFlight();

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
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&held, Dispatch::kWorker));
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::Status call_status;
  std::thread call([&] {
    auto stub = Registration::NewStub(Channel());
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
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
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
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(server.ok()) << server.status();
  auto health = grpc::health::v1::Health::NewStub(Channel());
  grpc::health::v1::HealthCheckRequest other;
  other.set_service("no.such.Service");
  grpc::health::v1::HealthCheckResponse checked;
  grpc::ClientContext check_ctx;
  EXPECT_EQ(health->Check(&check_ctx, other, &checked).error_code(), grpc::StatusCode::NOT_FOUND);

  grpc::ClientContext ctx;
  // A regression fails at the deadline instead of hanging.
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
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
  EXPECT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_FALSE(watch->Read(&seen));
  shutdown.join();
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "socket file left behind";
}

// A watch of a service the server does not know gets SERVICE_UNKNOWN and
// stays open; a caller that goes away ends it on the server too.
TEST_F(UnixGrpcServerTest, HealthWatchOfAnUnknownServiceStaysOpenUntilTheCallerGoes) {
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(server.ok()) << server.status();
  auto health = grpc::health::v1::Health::NewStub(Channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::health::v1::HealthCheckRequest other;
  other.set_service("no.such.Service");
  auto watch = health->Watch(&ctx, other);
  grpc::health::v1::HealthCheckResponse seen;
  ASSERT_TRUE(watch->Read(&seen));
  EXPECT_EQ(seen.status(), grpc::health::v1::HealthCheckResponse::SERVICE_UNKNOWN);
  // Still open: the watch counts as a call in flight.
  EXPECT_TRUE(base::WaitUntil([&] { return (*server)->InFlight() == 1; }, absl::Seconds(10)));
  ctx.TryCancel();
  EXPECT_FALSE(watch->Read(&seen));
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(base::WaitUntil([&] { return (*server)->InFlight() == 0; }, absl::Seconds(10)))
      << (*server)->InFlight();
}

// A raw call through a generic stub: `writes` request messages, then the
// answer (if any) and the status.
grpc::Status RawCall(std::shared_ptr<grpc::Channel> channel, const std::string& method,
                     int writes) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareCall(&ctx, method, &cq);
  void* tag;
  bool ok;
  call->StartCall(reinterpret_cast<void*>(1));
  cq.Next(&tag, &ok);
  for (int i = 0; i < writes; ++i) {
    grpc::Slice empty("", 0);
    grpc::ByteBuffer message(&empty, 1);
    call->Write(message, reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
  }
  call->WritesDone(reinterpret_cast<void*>(3));
  cq.Next(&tag, &ok);
  // The answer, if any, must be read before the status can come.
  grpc::ByteBuffer reply;
  call->Read(&reply, reinterpret_cast<void*>(4));
  cq.Next(&tag, &ok);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

TEST_F(UnixGrpcServerTest, UnaryCallWithoutARequestMessageIsInternal) {
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::Status status = RawCall(Channel(), "/pluginregistration.Registration/GetInfo", 0);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL) << status.error_message();
  // One message is served.
  status = RawCall(Channel(), "/pluginregistration.Registration/GetInfo", 1);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// An unknown method is refused as soon as the call arrives, without waiting
// for a message the client may never send.
TEST_F(UnixGrpcServerTest, UnknownMethodIsRefusedBeforeAnyMessage) {
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::GenericStub stub(Channel());
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareCall(&ctx, "/no.such.Service/Stream", &cq);
  void* tag;
  bool ok;
  call->StartCall(reinterpret_cast<void*>(1));
  cq.Next(&tag, &ok);
  // No message, no half-close: the status still comes.
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(2));
  cq.Next(&tag, &ok);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << status.error_message();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

// Server reflection over the socket, as grpcurl asks: the list of services,
// then the file of one of them, on one stream.
TEST_F(UnixGrpcServerTest, ServesReflection) {
  auto server = UnixGrpcServer::Start(path_, RegistrationRoutes(&service_));
  ASSERT_TRUE(server.ok()) << server.status();
  using grpc::reflection::v1alpha::ServerReflection;
  using grpc::reflection::v1alpha::ServerReflectionRequest;
  using grpc::reflection::v1alpha::ServerReflectionResponse;
  auto stub = ServerReflection::NewStub(Channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->ServerReflectionInfo(&ctx);
  ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  ServerReflectionResponse listed;
  ASSERT_TRUE(stream->Read(&listed));
  std::vector<std::string> names;
  for (const auto& service : listed.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"pluginregistration.Registration", "grpc.health.v1.Health",
                                      "grpc.reflection.v1alpha.ServerReflection"}));
  ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("pluginregistration.Registration");
  ASSERT_TRUE(stream->Write(symbol));
  ServerReflectionResponse file;
  ASSERT_TRUE(stream->Read(&file));
  EXPECT_EQ(file.file_descriptor_response().file_descriptor_proto_size(), 1);
  EXPECT_TRUE(stream->WritesDone());
  EXPECT_FALSE(stream->Read(&file));
  grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(base::WaitUntil([&] { return (*server)->InFlight() == 0; }, absl::Seconds(10)))
      << (*server)->InFlight();
}

}  // namespace
}  // namespace lustre_csi::server
