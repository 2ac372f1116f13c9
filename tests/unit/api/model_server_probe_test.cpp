// The model server test's real HTTP client against a real loopback socket that answers what
// each test sets (a few lines of POSIX, so the test needs no server program), and the
// reading of llama.cpp's and Ollama's model lists.
#include "api/model_server_probe.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

namespace handler::api {
namespace {

// Listens on 127.0.0.1:<port>; answers one connection with `answer` (or holds it, silent,
// until the test ends) and keeps the request line it was sent.
class OneAnswerServer {
public:
    explicit OneAnswerServer(std::string answer, bool silent = false) : answer_(std::move(answer)), silent_(silent) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd_, 4) != 0) std::abort();
        socklen_t size = sizeof address;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] {
            const int client = ::accept(fd_, nullptr, nullptr);
            if (client < 0) return;
            char buffer[4096];
            const auto got = ::read(client, buffer, sizeof buffer);
            if (got > 0) request_ = std::string(buffer, static_cast<std::size_t>(got));
            if (!silent_) {
                for (std::size_t sent = 0; sent < answer_.size();) {
                    // MSG_NOSIGNAL: the probe hangs up on a body over its limit, and a
                    // SIGPIPE would end the test binary.
                    const auto n = ::send(client, answer_.data() + sent, answer_.size() - sent, MSG_NOSIGNAL);
                    if (n <= 0) break;
                    sent += static_cast<std::size_t>(n);
                }
            } else {
                if (::read(client, buffer, sizeof buffer) < 0) {} // until the probe gives up and closes
            }
            ::close(client);
        });
    }
    ~OneAnswerServer() {
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        thread_.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    const std::string& request() const { return request_; }

private:
    std::string answer_;
    bool silent_;
    int fd_ = -1;
    unsigned port_ = 0;
    std::string request_;
    std::thread thread_;
};

std::string http(const std::string& status, const std::string& body, const std::string& extra = "") {
    return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n" + extra + "Content-Length: " +
           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

ModelServerReport run(ModelServerProbe& probe, const std::string& kind, const std::string& url) {
    std::promise<ModelServerReport> promise;
    auto future = promise.get_future();
    probe.probe(kind, url, [&](ModelServerReport report) { promise.set_value(std::move(report)); });
    return future.get();
}

TEST(ModelServerProbe, ReadsOllamasTagsFromARealServer) {
    OneAnswerServer server(http("200 OK", R"({"models":[{"name":"llama3:latest","size":1},{"name":"qwen2.5-coder:7b"}]})"));
    auto probe = make_http_model_server_probe();
    const auto report = run(*probe, "ollama", server.url());
    EXPECT_TRUE(report.reachable);
    EXPECT_EQ(report.status, 200u);
    EXPECT_EQ(report.models, (std::vector<std::string>{"llama3:latest", "qwen2.5-coder:7b"}));
    EXPECT_EQ(report.error, "");
    EXPECT_EQ(report.url, server.url() + "/api/tags");
    EXPECT_EQ(server.request().rfind("GET /api/tags HTTP/1.1\r\n", 0), 0u) << server.request();
}

TEST(ModelServerProbe, ReadsLlamaCppsModelsUnderABasePath) {
    OneAnswerServer server(http("200 OK", R"({"object":"list","data":[{"id":"qwen2.5-coder-7b-instruct-q4_k_m.gguf"}]})"));
    auto probe = make_http_model_server_probe();
    const auto report = run(*probe, "llama-cpp", server.url() + "/llm");
    EXPECT_EQ(report.models, (std::vector<std::string>{"qwen2.5-coder-7b-instruct-q4_k_m.gguf"}));
    EXPECT_EQ(server.request().rfind("GET /llm/v1/models HTTP/1.1\r\n", 0), 0u) << server.request();
}

TEST(ModelServerProbe, FollowsNoRedirectAndQuotesNoBody) {
    OneAnswerServer server(http("302 Found", "secret body text", "Location: http://169.254.169.254/\r\n"));
    auto probe = make_http_model_server_probe();
    const auto report = run(*probe, "ollama", server.url());
    EXPECT_TRUE(report.reachable);
    EXPECT_EQ(report.status, 302u);
    EXPECT_TRUE(report.models.empty());
    EXPECT_NE(report.error.find("follows none"), std::string::npos) << report.error;
    EXPECT_EQ(report.error.find("secret body text"), std::string::npos);
}

TEST(ModelServerProbe, SaysWhatOtherAnswersWere) {
    OneAnswerServer not_found(http("404 Not Found", "nope"));
    OneAnswerServer html(http("200 OK", "<html>a router's page</html>"));
    OneAnswerServer huge(http("200 OK", R"({"models":[)" + std::string(300 * 1024, ' ') + "]}"));
    auto probe = make_http_model_server_probe();
    const auto missing = run(*probe, "ollama", not_found.url());
    EXPECT_EQ(missing.status, 404u);
    EXPECT_NE(missing.error.find("answered 404 to GET /api/tags; is this an Ollama server?"), std::string::npos) << missing.error;
    const auto page = run(*probe, "ollama", html.url());
    EXPECT_NE(page.error.find("not a JSON object"), std::string::npos) << page.error;
    const auto big = run(*probe, "ollama", huge.url());
    EXPECT_NE(big.error.find("larger than 256 KiB"), std::string::npos) << big.error;
}

TEST(ModelServerProbe, AServerThatIsNotThereOrSilentIsNotReachable) {
    std::string closed_url;
    {
        OneAnswerServer gone(http("200 OK", "{}"));
        closed_url = gone.url();
    } // its port is closed now
    auto probe = make_http_model_server_probe();
    const auto refused = run(*probe, "ollama", closed_url);
    EXPECT_FALSE(refused.reachable);
    EXPECT_NE(refused.error.find("nothing answers at 127.0.0.1:"), std::string::npos) << refused.error;

    OneAnswerServer silent("", true);
    const auto quiet = run(*probe, "ollama", silent.url());
    EXPECT_FALSE(quiet.reachable);
    EXPECT_EQ(quiet.error, "no answer within 3 s");

    const auto tls = run(*probe, "ollama", "https://127.0.0.1:1");
    EXPECT_NE(tls.error.find("http:// servers only"), std::string::npos) << tls.error;
}

TEST(ModelServerProbe, ModelListsAreBoundedAndPrintable) {
    std::string body = R"({"models":[{"name":"ok"},{"name":"bad\u0007bell"},{"name":"ok"},{"model":"by-model"},7,)";
    for (int i = 0; i < 300; ++i) body += R"({"name":"m)" + std::to_string(i) + R"("},)";
    body += R"({"name":"last"}]})";
    ModelServerReport report;
    read_model_list(body, report);
    ASSERT_EQ(report.models.size(), kMaxModelNames);
    EXPECT_EQ(report.models[0], "ok");
    EXPECT_EQ(report.models[1], "by-model") << "control characters are left out, duplicates once";
    EXPECT_TRUE(report.more);
    ModelServerReport none;
    read_model_list(R"({"something":"else"})", none);
    EXPECT_NE(none.error.find("no list of models"), std::string::npos);
}

} // namespace
} // namespace handler::api
