// The model server test's HTTP client (model_server_probe.hpp): the only other translation
// unit of host/api with Beast beside server.cpp and client.cpp. One GET, on a worker thread
// with its own io_context, so a server that never answers holds that thread for at most
// kModelServerTimeoutSeconds and never handlerd's I/O thread.
#include "api/model_server_probe.hpp"

#include "core/utf8.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <optional>

namespace handler::api {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;

std::string_view model_list_path(std::string_view kind) {
    return kind == "ollama" ? "/api/tags" : "/v1/models";
}

namespace {

// A name as a person would read it: printable, bounded; anything else is left out rather
// than shown mangled.
bool shown_name(std::string_view name) {
    if (name.empty() || name.size() > kMaxModelNameBytes || !is_valid_utf8(name)) return false;
    return std::none_of(name.begin(), name.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte < 0x20 || byte == 0x7f;
    });
}

} // namespace

void read_model_list(std::string_view body, ModelServerReport& report) {
    boost::system::error_code error;
    const json::value parsed = json::parse(body, error);
    const json::object* top = error ? nullptr : parsed.if_object();
    if (top == nullptr) {
        report.error = "the answer is not a JSON object, so this is not a model server of this kind";
        return;
    }
    // llama.cpp answers OpenAI's {"data":[{"id"}]} (newer builds add "models"); Ollama
    // {"models":[{"name","model"}]}.
    const json::array* list = nullptr;
    for (const char* field : {"data", "models"}) {
        if (const auto* value = top->if_contains(field); value != nullptr && value->is_array()) {
            list = &value->as_array();
            break;
        }
    }
    if (list == nullptr) {
        report.error = "the answer has no list of models (\"data\" or \"models\")";
        return;
    }
    for (const auto& item : *list) {
        const json::object* model = item.if_object();
        if (model == nullptr) continue;
        for (const char* field : {"id", "name", "model"}) {
            const auto* value = model->if_contains(field);
            if (value == nullptr || !value->is_string()) continue;
            const std::string_view name = value->as_string();
            if (!shown_name(name)) break;
            if (std::find(report.models.begin(), report.models.end(), name) != report.models.end()) break;
            if (report.models.size() == kMaxModelNames) {
                report.more = true;
                return;
            }
            report.models.emplace_back(name);
            break;
        }
    }
}

namespace {

struct Target {
    std::string host, port, path;
    bool https = false;
};

std::optional<Target> split(const std::string& base_url, std::string_view kind) {
    auto url = boost::urls::parse_absolute_uri(base_url);
    if (!url) return std::nullopt;
    Target target;
    target.https = url->scheme() == "https";
    target.host = std::string(url->host_address());
    target.port = url->has_port() ? std::string(url->port()) : (target.https ? "443" : "80");
    target.path = std::string(url->encoded_path());
    while (!target.path.empty() && target.path.back() == '/') target.path.pop_back();
    target.path += model_list_path(kind);
    return target;
}

// One GET, answered or not within the time limit. Runs on the worker thread.
ModelServerReport fetch(const std::string& kind, const std::string& base_url) {
    ModelServerReport report;
    const auto target = split(base_url, kind);
    report.url = base_url + std::string(model_list_path(kind));
    if (!target) {
        report.error = "the URL cannot be read";
        return report;
    }
    if (target->https) {
        // Local servers speak plain HTTP; a TLS client here would be a second one to keep.
        report.error = "the test reaches http:// servers only; an https:// server can still be used by an "
                       "account, its agents will tell whether it answers";
        return report;
    }
    net::io_context io;
    net::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    beast::flat_buffer buffer;
    http::request<http::empty_body> request{http::verb::get, target->path, 11};
    std::optional<http::response_parser<http::string_body>> parser;
    parser.emplace();
    parser->body_limit(kMaxModelListBytes);
    parser->header_limit(16 * 1024);
    request.set(http::field::host, target->host + ":" + target->port);
    request.set(http::field::user_agent, "handlerd model-server test");
    request.set(http::field::accept, "application/json");
    std::string failure;
    bool answered = false;
    const auto fail = [&](std::string_view step, const beast::error_code& error) {
        failure = std::string(step) + ": " + error.message();
    };
    resolver.async_resolve(target->host, target->port, [&](beast::error_code resolved, net::ip::tcp::resolver::results_type found) {
        if (resolved) return fail("the name " + target->host + " cannot be resolved", resolved);
        stream.async_connect(found, [&](beast::error_code connected, const net::ip::tcp::endpoint&) {
            if (connected) return fail("nothing answers at " + target->host + ":" + target->port, connected);
            http::async_write(stream, request, [&](beast::error_code written, std::size_t) {
                if (written) return fail("sending the request failed", written);
                http::async_read(stream, buffer, *parser, [&](beast::error_code got, std::size_t) {
                    if (got == http::error::body_limit)
                        return fail("the answer is larger than " + std::to_string(kMaxModelListBytes / 1024) + " KiB", got);
                    if (got) return fail("reading the answer failed", got);
                    answered = true;
                });
            });
        });
    });
    io.run_for(std::chrono::seconds(kModelServerTimeoutSeconds));
    if (!io.stopped()) {
        // Still resolving, connecting or reading: whatever it was, it is given up.
        resolver.cancel();
        beast::error_code ignored;
        stream.socket().close(ignored);
        io.stop();
        // (A name lookup that hangs in getaddrinfo still holds this worker until it returns:
        // asio cannot cut it short. Local servers are named by address or localhost.)
        if (failure.empty()) failure = "no answer within " + std::to_string(kModelServerTimeoutSeconds) + " s";
    }
    if (parser->is_header_done()) {
        report.reachable = true;
        report.status = parser->get().result_int();
    }
    if (!answered) {
        report.error = failure.empty() ? "no answer" : failure;
        return report;
    }
    const unsigned status = report.status;
    if (status >= 300 && status < 400) {
        // Followed, a redirect would let a URL lead the daemon anywhere.
        report.error = "the server answered " + std::to_string(status) + " (a redirect); the test follows none: "
                       "give the server's own URL";
        return report;
    }
    if (status != 200) {
        report.error = "the server answered " + std::to_string(status) + " to GET " + target->path +
                       "; is this " + (kind == "ollama" ? "an Ollama" : "a llama.cpp") + " server?";
        return report;
    }
    read_model_list(parser->get().body(), report);
    return report;
}

class HttpModelServerProbe final : public ModelServerProbe {
public:
    explicit HttpModelServerProbe(std::size_t max_waiting) : max_waiting_(max_waiting) {}
    ~HttpModelServerProbe() override { pool_.join(); }

    void probe(std::string kind, std::string base_url, std::function<void(ModelServerReport)> done) override {
        if (waiting_.fetch_add(1) >= max_waiting_) {
            waiting_.fetch_sub(1);
            ModelServerReport busy;
            busy.url = base_url + std::string(model_list_path(kind));
            busy.error = "too many tests are waiting already; try again in a few seconds";
            done(std::move(busy));
            return;
        }
        net::post(pool_, [this, kind = std::move(kind), base_url = std::move(base_url), done = std::move(done)] {
            ModelServerReport report;
            try {
                report = fetch(kind, base_url);
            } catch (const std::exception& error) {
                report.url = base_url;
                report.error = std::string("the test failed: ") + error.what();
            }
            waiting_.fetch_sub(1);
            done(std::move(report));
        });
    }

private:
    std::size_t max_waiting_;
    std::atomic<std::size_t> waiting_{0};
    net::thread_pool pool_{1};
};

} // namespace

std::unique_ptr<ModelServerProbe> make_http_model_server_probe(std::size_t max_waiting) {
    return std::make_unique<HttpModelServerProbe>(max_waiting);
}

} // namespace handler::api
