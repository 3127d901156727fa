// standin-apiserver: a stand-in for the Kubernetes API server, as much as the
// node plugin's taint removal uses, over real TLS (a certificate the test
// made). It keeps one Node in a JSON file, answers GET and PATCH of
// /api/v1/nodes/<name> (JSON patches, RFC 6902 "test" and "replace" of
// /spec/taints, applied as the real server does: a failed test is 422 and
// changes nothing), and appends every request it gets to a log, one JSON
// object a line: method, target, content_type, authorization, body.
//
//   standin-apiserver --port=N --cert=server.crt --key=server.key
//       --node=node.json --log=requests.log [--fail=401,403,...]
//       [--change-before-patch=<taint key>]
//
// --fail answers the first requests with those statuses (a Status object);
// --change-before-patch adds that taint to the node just before the first
// patch is applied, as a concurrent writer would. Single-threaded; one
// connection at a time. Exits on SIGTERM.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using Json = nlohmann::json;

namespace {

std::string Flag(int argc, char** argv, const std::string& name) {
  std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

Json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return Json::parse(buf.str());
}

void WriteJson(const std::string& path, const Json& j) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << j.dump();
  std::rename(tmp.c_str(), path.c_str());
}

Json Status(int code, const std::string& message) {
  return {{"kind", "Status"}, {"status", "Failure"}, {"message", message}, {"code", code}};
}

}  // namespace

int main(int argc, char** argv) {
  const int port = std::atoi(Flag(argc, argv, "port").c_str());
  const std::string node_file = Flag(argc, argv, "node");
  const std::string log_file = Flag(argc, argv, "log");
  std::string change = Flag(argc, argv, "change-before-patch");
  std::deque<int> fail;
  std::stringstream fails(Flag(argc, argv, "fail"));
  for (std::string s; std::getline(fails, s, ',');) {
    if (!s.empty()) fail.push_back(std::atoi(s.c_str()));
  }

  ssl::context ctx(ssl::context::tls_server);
  ctx.use_certificate_chain_file(Flag(argc, argv, "cert"));
  ctx.use_private_key_file(Flag(argc, argv, "key"), ssl::context::pem);
  net::io_context ioc;
  tcp::acceptor acceptor(ioc, {net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)});
  std::cout << "listening on 127.0.0.1:" << port << std::endl;

  while (true) {
    tcp::socket socket(ioc);
    acceptor.accept(socket);
    beast::ssl_stream<tcp::socket> stream(std::move(socket), ctx);
    beast::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    if (ec) {
      std::cerr << "handshake: " << ec.message() << std::endl;
      continue;  // e.g. a client that does not trust this certificate
    }
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    http::read(stream, buffer, req, ec);
    if (ec) continue;
    Json logged = {{"method", std::string(req.method_string())},
                   {"target", std::string(req.target())},
                   {"content_type", std::string(req[http::field::content_type])},
                   {"authorization", std::string(req[http::field::authorization])},
                   {"body", req.body()}};
    {
      std::ofstream log(log_file, std::ios::app);
      log << logged.dump() << "\n";
    }

    int status = 200;
    Json answer;
    Json node = ReadJson(node_file);
    const std::string want = "/api/v1/nodes/" + node["metadata"]["name"].get<std::string>();
    if (!fail.empty()) {
      status = fail.front();
      fail.pop_front();
      answer = Status(status, "scripted failure");
    } else if (std::string(req.target()) != want) {
      status = 404;
      answer = Status(404, "nodes not found");
    } else if (req.method() == http::verb::get) {
      answer = node;
    } else if (req.method() == http::verb::patch) {
      if (req[http::field::content_type] != "application/json-patch+json") {
        status = 415;
        answer = Status(415, "unsupported patch type");
      } else {
        if (!change.empty()) {
          node["spec"]["taints"].push_back({{"key", change}, {"effect", "NoSchedule"}});
          change.clear();
          WriteJson(node_file, node);
        }
        Json patch = Json::parse(req.body(), nullptr, false);
        Json changed = node;
        for (const Json& op : patch) {
          Json& taints = changed["spec"]["taints"];
          if (op.value("path", "") != "/spec/taints") {
            status = 422;
          } else if (op.value("op", "") == "test") {
            if (taints != op["value"]) status = 422;
          } else if (op.value("op", "") == "replace") {
            taints = op["value"];
          } else {
            status = 422;
          }
          if (status != 200) break;
        }
        if (status == 200) {
          WriteJson(node_file, changed);
          answer = changed;
        } else {
          answer = Status(422, "the server rejected our request: test operation failed");
        }
      }
    } else {
      status = 405;
      answer = Status(405, "method not allowed");
    }
    http::response<http::string_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::connection, "close");
    res.body() = answer.dump();
    res.prepare_payload();
    http::write(stream, res, ec);
    stream.shutdown(ec);
  }
}
