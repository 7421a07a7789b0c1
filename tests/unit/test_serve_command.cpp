// `voxrt serve`'s options as a new user meets them (issue 33): a value out of range is refused
// before anything starts (exit 2, naming the option); --host takes a name; the access log leaves
// out the probes that succeed (every open caption page polls /metrics) unless --log-probes.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <string>

#include "cli_run.h"
#include "http_test_client.h"
#include "serve_process.h"
#include "server/access_log.h"

namespace voxrt::test {
namespace {

namespace http = boost::beast::http;

RunResult serve_with(const std::string& args) { return run_voxrt("serve --model " + model_dir() + " --device cpu --port 0 " + args); }

TEST(ServeCommand, ANegativeDrainIsRefusedNamingTheOption) {
  for (const std::string value : {"-1", "=-1", "-0.5"}) {
    SCOPED_TRACE(value);
    const RunResult r = serve_with("--drain-seconds" + std::string(value[0] == '=' ? "" : " ") + value);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("--drain-seconds"), std::string::npos) << r.err;
  }
}

// `--api-key "$KEY"` with $KEY unset must not start a server open to anyone.
TEST(ServeCommand, AnEmptyApiKeyIsRefused) {
  const RunResult r = serve_with("--api-key ''");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--api-key: the key is empty"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("serving"), std::string::npos) << r.err;
  setenv("VOXRT_API_KEY", "", 1);  // the child inherits it
  const RunResult env = serve_with("");
  unsetenv("VOXRT_API_KEY");
  EXPECT_EQ(env.status, 2) << env.err;
  EXPECT_NE(env.err.find("$VOXRT_API_KEY is set but empty"), std::string::npos) << env.err;
}

TEST(ServeCommand, ListensOnLocalhostByName) {
  ServeProcess serve({"--host", "localhost"});
  ASSERT_NE(serve.port(), 0) << serve.said();
  EXPECT_NE(serve.said().find("serving http://localhost:" + std::to_string(serve.port())), std::string::npos) << serve.said();
  EXPECT_EQ(testutil::HttpTestClient(serve.port()).request(http::verb::get, "/health").status, 200);
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait_exit(std::chrono::seconds(30)), 0) << serve.said();
}

// The access log of a server that answered two probes, a model list and a 404, once stopped.
std::string access_log_of(const std::vector<std::string>& args) {
  ServeProcess serve(args);
  if (serve.port() == 0) return "did not start: " + serve.said();
  const testutil::HttpTestClient c(serve.port());
  EXPECT_EQ(c.request(http::verb::get, "/health").status, 200);
  EXPECT_EQ(c.request(http::verb::get, "/metrics").status, 200);
  EXPECT_EQ(c.request(http::verb::get, "/v1/models").status, 200);
  EXPECT_EQ(c.request(http::verb::get, "/metrics/nothing").status, 404);
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait_exit(std::chrono::seconds(30)), 0) << serve.said();
  return serve.said();
}

TEST(ServeCommand, TheAccessLogLeavesOutProbesThatSucceedUnlessAsked) {
  const std::string quiet = access_log_of({});
  EXPECT_NE(quiet.find(R"("target":"/v1/models")"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find(R"("target":"/metrics/nothing")"), std::string::npos) << quiet;  // failures stay
  EXPECT_EQ(quiet.find(R"("target":"/metrics")"), std::string::npos) << quiet;
  EXPECT_EQ(quiet.find(R"("target":"/health")"), std::string::npos) << quiet;
  const std::string all = access_log_of({"--log-probes"});
  EXPECT_NE(all.find(R"("target":"/metrics")"), std::string::npos) << all;
  EXPECT_NE(all.find(R"("target":"/health")"), std::string::npos) << all;
}

TEST(AccessLog, RoutineProbesAreSuccessfulGetsOfHealthAndMetrics) {
  const auto probe = [](std::string method, std::string target, int status, bool completed = true) {
    server::AccessRecord r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.status = status;
    r.completed = completed;
    return server::is_routine_probe(r);
  };
  EXPECT_TRUE(probe("GET", "/metrics", 200));
  EXPECT_TRUE(probe("GET", "/health?live", 200));
  EXPECT_TRUE(probe("HEAD", "/health", 200));
  EXPECT_FALSE(probe("GET", "/health", 503));  // loading, draining, saturated: worth a line
  EXPECT_TRUE(probe("GET", "/metrics", 200, /*completed=*/false));  // a poller that hung up at once
  EXPECT_FALSE(probe("POST", "/health", 405));
  EXPECT_FALSE(probe("GET", "/v1/models", 200));
  EXPECT_FALSE(probe("GET", "/metricsx", 404));
  server::AccessRecord r;
  r.method = "GET";
  r.target = "/x";
  r.status = 200;
  r.seconds = 0.01234;
  EXPECT_EQ(server::access_log_line(r, 0),
            R"({"bytes":0,"completed":true,"method":"GET","ms":12.3,"remote":"","status":200,"target":"/x","time":"1970-01-01T00:00:00Z"})");
}

}  // namespace
}  // namespace voxrt::test
