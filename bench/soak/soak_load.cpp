// soak_load: the load generator of bench/soak.sh, run INSIDE a session's container. One
// thread, C++20 coroutines on Asio; linked statically so that it runs in any image.
//
//   soak_load --records FILE --rate R --duration-s S --key-host HOST:PORT --tunnel-host HOST:PORT
//             --toggle-host HOST:PORT --upstream-ca FILE [--proxy-ca FILE] [--proxy IP:PORT]
//             [--api-key VALUE] [--mix intercept=4,tunnel=3,toggle-new=2,toggle-kept=1]
//             [--workers N] [--timeout-s T] [--drain-s D]
//
// Every 1/R seconds, open loop, one request is due; its kind comes round-robin from the mix:
//   intercept    a keep-alive TLS connection to the key's host through CONNECT, trusting
//                Handler's CA (--proxy-ca: the proxy terminates TLS there), GET /echo-key
//                with x-api-key: the stand-in (--api-key, default $ANTHROPIC_API_KEY). The
//                upstream answers 401 unless it got the REAL key, and quotes the key it got,
//                which the proxy must mask: the answer must be exactly "key=<stand-in>".
//   tunnel       a keep-alive tunnel to an always-allowed host, TLS end to end with the
//                upstream (--upstream-ca), GET /small.
//   toggle-new   a new connection per request to the host whose allow-list entry
//                bench/soak.sh toggles every second: CONNECT, TLS, GET /small, close.
//   toggle-kept  the same host on keep-alive tunnels: a tunnel the proxy cuts (the host
//                was refused) is opened again by the next request, which may be refused.
// Keep-alive kinds have --workers connections each, used in turn (so none idles into the
// proxy's idle timeout); a request waits for a free one. Requests are never retried.
//
// Outcomes: ok; refused (the proxy's 403 to the CONNECT, naming the host as not allowed);
// cut (a connection the proxy had admitted ended under the request); error (anything
// else: another status, a wrong body, a TLS failure); timeout (--timeout-s, default 10).
// This program does not judge them: whether the policy at that instant explained an
// outcome is bench/soak/analyze.py's question, with the times of each allow-list change
// as the API acknowledged them. So every request becomes one line of --records:
//
//   KIND NEW SCHEDULED CONNECT_SENT CONNECT_ANSWERED SENT ENDED OUTCOME DETAIL
//
// NEW is 1 when this request opened its connection; the times are CLOCK_MONOTONIC in
// microseconds (the container shares the host's clock: podman makes no time namespace),
// 0 where a step was not reached; CONNECT_* are those of the connection the request used.
// DETAIL is "-" or what went wrong, spaces replaced. The last line is
// "# issued=N finished=M duration_s=S cpu_ms=C". A summary goes to stdout.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#pragma GCC diagnostic pop

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

enum class Kind { intercept = 0, tunnel, toggle_new, toggle_kept };
constexpr std::array<std::string_view, 4> kKindNames = {"intercept", "tunnel", "toggle-new", "toggle-kept"};
enum class Outcome { ok = 0, refused, cut, error, timeout };
constexpr std::array<std::string_view, 5> kOutcomeNames = {"ok", "refused", "cut", "error", "timeout"};

// Answers bigger than this are not what the upstreams send; reading on would only grow memory.
constexpr std::uint64_t kBodyLimitBytes = 64 * 1024;

std::int64_t microseconds(SteadyClock::time_point time) {
    return std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
}
std::int64_t now_us() { return microseconds(SteadyClock::now()); }

struct Target {
    std::string host;
    std::uint16_t port = 0;
    std::string authority; // host:port, as the CONNECT names it
    std::string host_header;
};

Target parse_target(const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) throw std::invalid_argument("'" + text + "' is not HOST:PORT");
    Target target;
    target.host = text.substr(0, colon);
    const unsigned long port = std::stoul(text.substr(colon + 1));
    if (port == 0 || port > 65535) throw std::invalid_argument("'" + text + "' has no valid port");
    target.port = static_cast<std::uint16_t>(port);
    target.authority = text;
    target.host_header = port == 443 ? target.host : text;
    return target;
}

struct Options {
    std::string records_path;
    double rate = 500;
    double duration_s = 600;
    std::string proxy = "127.0.0.1:3128";
    Target key_host;
    Target tunnel_host;
    Target toggle_host;
    std::string upstream_ca;
    std::string proxy_ca = "/run/handler/ca.crt";
    std::string api_key;
    std::vector<Kind> mix;
    int workers = 8;
    double timeout_s = 10;
    double drain_s = 15;
};

std::vector<Kind> parse_mix(const std::string& text) {
    std::vector<Kind> mix;
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find(',', begin);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(begin, end - begin);
        const auto equals = item.find('=');
        if (equals == std::string::npos) throw std::invalid_argument("--mix item '" + item + "' is not KIND=WEIGHT");
        const std::string name = item.substr(0, equals);
        const int weight = std::stoi(item.substr(equals + 1));
        if (weight < 0 || weight > 100) throw std::invalid_argument("--mix weight of " + name + " is not 0 to 100");
        bool known = false;
        for (std::size_t kind = 0; kind < kKindNames.size(); ++kind) {
            if (kKindNames[kind] != name) continue;
            known = true;
            for (int i = 0; i < weight; ++i) mix.push_back(static_cast<Kind>(kind));
        }
        if (!known) throw std::invalid_argument("--mix names an unknown kind '" + name + "'");
        begin = end + 1;
    }
    if (mix.empty()) throw std::invalid_argument("--mix gives no requests");
    // Spread each kind over the cycle (4,3,2,1 gives I T G I T K I G T I rather than IIII...)
    // so that the kinds interleave at every instant.
    std::vector<Kind> spread;
    std::map<Kind, std::pair<double, double>> step; // kind -> (next slot, stride)
    std::map<Kind, int> count;
    for (Kind kind : mix) ++count[kind];
    for (auto [kind, n] : count) step[kind] = {0.5 * static_cast<double>(mix.size()) / n, static_cast<double>(mix.size()) / n};
    while (spread.size() < mix.size()) {
        auto next = step.begin();
        for (auto it = step.begin(); it != step.end(); ++it)
            if (it->second.first < next->second.first) next = it;
        spread.push_back(next->first);
        next->second.first += next->second.second;
    }
    return spread;
}

struct Record {
    Kind kind = Kind::intercept;
    bool new_connection = false;
    std::int64_t scheduled = 0;
    std::int64_t connect_sent = 0;
    std::int64_t connect_answered = 0;
    std::int64_t sent = 0;
    std::int64_t ended = 0;
    Outcome outcome = Outcome::error;
    std::string detail = "-";
};

// One connection through the proxy: the TCP socket to it, TLS over the tunnel.
struct Connection {
    Connection(net::io_context& io, ssl::context& tls) : stream(io, tls) {}
    ssl::stream<tcp::socket> stream;
    beast::flat_buffer buffer;
    std::int64_t connect_sent = 0;
    std::int64_t connect_answered = 0;
    bool admitted = false;  // the CONNECT got its 200
    bool timed_out = false; // the watchdog closed it
};

// A connection the peer ended (the proxy cutting a tunnel), as opposed to a failure of
// another kind. Which of these a request may meet is the analysis's question.
bool is_cut(const boost::system::error_code& error) {
    return error == net::error::eof || error == net::error::connection_reset || error == net::error::broken_pipe ||
           error == net::error::connection_aborted || error == ssl::error::stream_truncated;
}

std::string without_spaces(std::string text) {
    for (char& c : text)
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') c = '_';
    if (text.size() > 160) text.resize(160);
    return text.empty() ? "-" : text;
}

class Soak {
public:
    Soak(net::io_context& io, Options options)
        : io_(io), options_(std::move(options)), drain_timer_(io) {
        const auto colon = options_.proxy.rfind(':');
        if (colon == std::string::npos) throw std::invalid_argument("--proxy wants IP:PORT");
        proxy_ = tcp::endpoint(net::ip::make_address(options_.proxy.substr(0, colon)),
                               static_cast<std::uint16_t>(std::stoul(options_.proxy.substr(colon + 1))));
        for (ssl::context* tls : {&upstream_tls_, &proxy_tls_}) {
            tls->set_verify_mode(ssl::verify_peer);
            static constexpr unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
            SSL_CTX_set_alpn_protos(tls->native_handle(), kAlpn, sizeof kAlpn);
        }
        upstream_tls_.load_verify_file(options_.upstream_ca);
        proxy_tls_.load_verify_file(options_.proxy_ca);
        records_ = std::fopen(options_.records_path.c_str(), "w");
        if (records_ == nullptr) throw std::runtime_error("cannot write " + options_.records_path);
        std::setvbuf(records_, nullptr, _IOFBF, 1 << 20);
        requests_[static_cast<int>(Kind::intercept)] = "GET /echo-key HTTP/1.1\r\nHost: " + options_.key_host.host_header +
                                                       "\r\nx-api-key: " + options_.api_key +
                                                       "\r\nUser-Agent: soak_load\r\n\r\n";
        requests_[static_cast<int>(Kind::tunnel)] =
            "GET /small HTTP/1.1\r\nHost: " + options_.tunnel_host.host_header + "\r\n\r\n";
        requests_[static_cast<int>(Kind::toggle_new)] =
            "GET /small HTTP/1.1\r\nHost: " + options_.toggle_host.host_header + "\r\nConnection: close\r\n\r\n";
        requests_[static_cast<int>(Kind::toggle_kept)] =
            "GET /small HTTP/1.1\r\nHost: " + options_.toggle_host.host_header + "\r\n\r\n";
    }

    int run() {
        started_ = SteadyClock::now();
        net::co_spawn(io_, ticker(), net::detached);
        for (Kind kind : {Kind::intercept, Kind::tunnel, Kind::toggle_kept})
            for (int i = 0; i < options_.workers; ++i) net::co_spawn(io_, worker(kind), net::detached);
        io_.run();
        rusage usage{};
        ::getrusage(RUSAGE_SELF, &usage);
        const auto ms = [](const timeval& time) { return time.tv_sec * 1000 + time.tv_usec / 1000; };
        std::fprintf(records_, "# issued=%llu finished=%llu duration_s=%.1f cpu_ms=%lld\n",
                     static_cast<unsigned long long>(issued_), static_cast<unsigned long long>(finished_),
                     options_.duration_s, static_cast<long long>(ms(usage.ru_utime) + ms(usage.ru_stime)));
        std::fclose(records_);
        std::cout << "soak_load: issued=" << issued_ << " finished=" << finished_;
        for (std::size_t kind = 0; kind < kKindNames.size(); ++kind) {
            std::cout << " " << kKindNames[kind] << "=";
            for (std::size_t outcome = 0; outcome < kOutcomeNames.size(); ++outcome)
                std::cout << (outcome ? "/" : "") << counts_[kind][outcome];
        }
        std::cout << " (ok/refused/cut/error/timeout) cpu_ms=" << ms(usage.ru_utime) + ms(usage.ru_stime) << std::endl;
        return issued_ == finished_ ? 0 : 1;
    }

private:
    struct Pool {
        std::deque<std::int64_t> due;          // scheduled times of the requests waiting
        std::deque<net::steady_timer*> idle;   // the workers waiting for one, oldest first
    };

    const Target& target_of(Kind kind) const {
        switch (kind) {
        case Kind::intercept: return options_.key_host;
        case Kind::tunnel: return options_.tunnel_host;
        default: return options_.toggle_host;
        }
    }
    ssl::context& tls_of(Kind kind) { return kind == Kind::intercept ? proxy_tls_ : upstream_tls_; }

    // Open loop: request k is due at started + k / rate whatever became of the ones before.
    net::awaitable<void> ticker() {
        net::steady_timer timer(io_);
        const auto period = std::chrono::duration<double>(1.0 / options_.rate);
        const auto until = started_ + std::chrono::duration_cast<SteadyClock::duration>(
                                          std::chrono::duration<double>(options_.duration_s));
        for (std::uint64_t k = 0;; ++k) {
            const auto due = started_ + std::chrono::duration_cast<SteadyClock::duration>(period * static_cast<double>(k));
            if (due >= until) break;
            if (due > SteadyClock::now()) {
                timer.expires_at(due);
                co_await timer.async_wait(net::use_awaitable);
            }
            const Kind kind = options_.mix[k % options_.mix.size()];
            ++issued_;
            if (kind == Kind::toggle_new) {
                net::co_spawn(io_, one_shot(microseconds(due)), net::detached);
            } else {
                Pool& pool = pools_[static_cast<int>(kind)];
                pool.due.push_back(microseconds(due));
                if (!pool.idle.empty()) {
                    pool.idle.front()->cancel();
                    pool.idle.pop_front();
                }
            }
        }
        stopping_ = true;
        wake_all();
        if (finished_ == issued_) co_return;
        // What has not finished by then is counted as not finished (issued != finished).
        drain_timer_.expires_after(std::chrono::duration_cast<SteadyClock::duration>(
            std::chrono::duration<double>(options_.drain_s)));
        boost::system::error_code error;
        co_await drain_timer_.async_wait(net::redirect_error(net::use_awaitable, error));
        if (!error) io_.stop();
    }

    void wake_all() {
        for (Pool& pool : pools_) {
            for (net::steady_timer* timer : pool.idle) timer->cancel();
            pool.idle.clear();
        }
    }

    // Closes the connection when a request takes too long; the request then ends as a timeout.
    struct Watchdog {
        Watchdog(net::io_context& io, const std::shared_ptr<Connection>& watched, double seconds)
            : timer(std::make_shared<net::steady_timer>(io)) {
            timer->expires_after(std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds)));
            timer->async_wait([weak = std::weak_ptr<Connection>(watched), keep = timer](const boost::system::error_code& error) {
                auto connection = weak.lock();
                if (error || !connection) return;
                connection->timed_out = true;
                boost::system::error_code ignored;
                connection->stream.next_layer().close(ignored);
            });
        }
        ~Watchdog() { timer->cancel(); }
        Watchdog(const Watchdog&) = delete;
        Watchdog& operator=(const Watchdog&) = delete;
        std::shared_ptr<net::steady_timer> timer;
    };

    // CONNECT and TLS. False when the proxy refused the CONNECT (the record says how).
    net::awaitable<bool> open(Connection& connection, const Target& target, Record& record) {
        auto& socket = connection.stream.next_layer();
        connection.connect_sent = record.connect_sent = now_us();
        co_await socket.async_connect(proxy_, net::use_awaitable);
        socket.set_option(tcp::no_delay(true));
        const std::string request =
            "CONNECT " + target.authority + " HTTP/1.1\r\nHost: " + target.authority + "\r\n\r\n";
        co_await net::async_write(socket, net::buffer(request), net::use_awaitable);
        http::response_parser<http::string_body> answer;
        answer.body_limit(kBodyLimitBytes);
        co_await http::async_read_header(socket, connection.buffer, answer, net::use_awaitable);
        connection.connect_answered = record.connect_answered = now_us();
        const unsigned status = answer.get().result_int();
        if (status != 200) {
            co_await http::async_read(socket, connection.buffer, answer, net::use_awaitable);
            record.ended = now_us();
            const std::string& body = answer.get().body();
            // The refusal the policy gives: "handler: HOST:PORT is not allowed for agent ...".
            if (status == 403 && body.find(target.authority + " is not allowed") != std::string::npos) {
                record.outcome = Outcome::refused;
            } else {
                record.outcome = Outcome::error;
                record.detail = without_spaces("CONNECT answered " + std::to_string(status) + ": " + body);
            }
            co_return false;
        }
        if (connection.buffer.size() != 0) throw std::runtime_error("bytes after the CONNECT answer");
        connection.admitted = true;
        // SSL_set_tlsext_host_name, without the macro's C cast.
        SSL_ctrl(connection.stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(target.host.c_str()));
        SSL_set1_host(connection.stream.native_handle(), target.host.c_str());
        co_await connection.stream.async_handshake(ssl::stream_base::client, net::use_awaitable);
        co_return true;
    }

    // One request on an open connection; false when the connection cannot be used again.
    net::awaitable<bool> ask(Connection& connection, Kind kind, Record& record) {
        record.sent = now_us();
        co_await net::async_write(connection.stream, net::buffer(requests_[static_cast<int>(kind)]), net::use_awaitable);
        http::response_parser<http::string_body> parser;
        parser.body_limit(kBodyLimitBytes);
        co_await http::async_read(connection.stream, connection.buffer, parser, net::use_awaitable);
        record.ended = now_us();
        const auto& response = parser.get();
        const std::string& body = response.body();
        if (response.result_int() != 200) {
            record.outcome = Outcome::error;
            record.detail = without_spaces("answered " + std::to_string(response.result_int()) + ": " + body);
        } else if (kind == Kind::intercept ? body != "key=" + options_.api_key : body.size() != 128) {
            // On the key's host the upstream quoted the key it got, which must come back as
            // the stand-in: anything else is a key the container should never see.
            record.outcome = Outcome::error;
            record.detail = kind == Kind::intercept ? "the_answer_does_not_quote_the_stand-in"
                                                    : without_spaces("a body of " + std::to_string(body.size()) + " bytes");
        } else {
            record.outcome = Outcome::ok;
        }
        co_return record.outcome == Outcome::ok && response.keep_alive();
    }

    void failed(const Connection& connection, Record& record, const boost::system::error_code& code,
                const std::string& what) {
        record.ended = now_us();
        if (connection.timed_out) {
            record.outcome = Outcome::timeout;
        } else if (connection.admitted && is_cut(code)) {
            record.outcome = Outcome::cut;
            record.detail = without_spaces(code.message());
        } else {
            record.outcome = Outcome::error;
            record.detail = without_spaces(what);
        }
    }

    net::awaitable<void> one_shot(std::int64_t scheduled) {
        Record record;
        record.kind = Kind::toggle_new;
        record.new_connection = true;
        record.scheduled = scheduled;
        auto connection = std::make_shared<Connection>(io_, upstream_tls_);
        {
            Watchdog watchdog(io_, connection, options_.timeout_s);
            try {
                if (co_await open(*connection, options_.toggle_host, record))
                    co_await ask(*connection, Kind::toggle_new, record);
            } catch (const boost::system::system_error& error) {
                failed(*connection, record, error.code(), error.code().message());
            } catch (const std::exception& error) {
                failed(*connection, record, {}, error.what());
            }
        }
        finish(record);
    }

    net::awaitable<void> worker(Kind kind) {
        Pool& pool = pools_[static_cast<int>(kind)];
        net::steady_timer wake(io_);
        std::shared_ptr<Connection> connection;
        for (;;) {
            while (pool.due.empty()) {
                if (stopping_) co_return;
                wake.expires_at(SteadyClock::time_point::max());
                pool.idle.push_back(&wake);
                boost::system::error_code ignored;
                co_await wake.async_wait(net::redirect_error(net::use_awaitable, ignored));
            }
            Record record;
            record.kind = kind;
            record.scheduled = pool.due.front();
            pool.due.pop_front();
            if (!connection) {
                connection = std::make_shared<Connection>(io_, tls_of(kind));
                record.new_connection = true;
            }
            bool reusable = false;
            {
                Watchdog watchdog(io_, connection, options_.timeout_s);
                try {
                    if (record.new_connection && !co_await open(*connection, target_of(kind), record)) {
                        reusable = false;
                    } else {
                        record.connect_sent = connection->connect_sent;
                        record.connect_answered = connection->connect_answered;
                        reusable = co_await ask(*connection, kind, record);
                    }
                } catch (const boost::system::system_error& error) {
                    failed(*connection, record, error.code(), error.code().message());
                } catch (const std::exception& error) {
                    failed(*connection, record, {}, error.what());
                }
            }
            if (!reusable) connection.reset();
            finish(record);
        }
    }

    void finish(const Record& record) {
        ++finished_;
        ++counts_[static_cast<int>(record.kind)][static_cast<int>(record.outcome)];
        std::fprintf(records_, "%s %d %lld %lld %lld %lld %lld %s %s\n", kKindNames[static_cast<int>(record.kind)].data(),
                     record.new_connection ? 1 : 0, static_cast<long long>(record.scheduled),
                     static_cast<long long>(record.connect_sent), static_cast<long long>(record.connect_answered),
                     static_cast<long long>(record.sent), static_cast<long long>(record.ended),
                     kOutcomeNames[static_cast<int>(record.outcome)].data(), record.detail.c_str());
        if (stopping_ && finished_ == issued_) drain_timer_.cancel();
    }

    net::io_context& io_;
    const Options options_;
    tcp::endpoint proxy_;
    ssl::context upstream_tls_{ssl::context::tls_client};
    ssl::context proxy_tls_{ssl::context::tls_client};
    std::array<std::string, 4> requests_;
    std::array<Pool, 4> pools_;
    std::array<std::array<std::uint64_t, 5>, 4> counts_{};
    std::FILE* records_ = nullptr;
    SteadyClock::time_point started_{};
    net::steady_timer drain_timer_;
    std::uint64_t issued_ = 0;
    std::uint64_t finished_ = 0;
    bool stopping_ = false;
};

Options parse_options(int argc, char** argv) {
    Options options;
    std::string mix = "intercept=4,tunnel=3,toggle-new=2,toggle-kept=1";
    if (const char* key = std::getenv("ANTHROPIC_API_KEY")) options.api_key = key;
    for (int i = 1; i < argc; i += 2) {
        const std::string_view name = argv[i];
        if (i + 1 >= argc) throw std::invalid_argument("option '" + std::string(name) + "' needs a value");
        const std::string value = argv[i + 1];
        if (name == "--records") options.records_path = value;
        else if (name == "--rate") options.rate = std::stod(value);
        else if (name == "--duration-s") options.duration_s = std::stod(value);
        else if (name == "--proxy") options.proxy = value;
        else if (name == "--key-host") options.key_host = parse_target(value);
        else if (name == "--tunnel-host") options.tunnel_host = parse_target(value);
        else if (name == "--toggle-host") options.toggle_host = parse_target(value);
        else if (name == "--upstream-ca") options.upstream_ca = value;
        else if (name == "--proxy-ca") options.proxy_ca = value;
        else if (name == "--api-key") options.api_key = value;
        else if (name == "--mix") mix = value;
        else if (name == "--workers") options.workers = std::stoi(value);
        else if (name == "--timeout-s") options.timeout_s = std::stod(value);
        else if (name == "--drain-s") options.drain_s = std::stod(value);
        else throw std::invalid_argument("unknown option '" + std::string(name) + "'");
    }
    options.mix = parse_mix(mix);
    if (options.records_path.empty() || options.upstream_ca.empty() || options.key_host.port == 0 ||
        options.tunnel_host.port == 0 || options.toggle_host.port == 0)
        throw std::invalid_argument("--records, --upstream-ca, --key-host, --tunnel-host and --toggle-host are required");
    if (options.api_key.empty()) throw std::invalid_argument("no --api-key and no ANTHROPIC_API_KEY");
    if (!(options.rate > 0 && options.rate <= 100000) || !(options.duration_s > 0) || options.workers < 1 ||
        options.workers > 1024 || !(options.timeout_s > 0) || !(options.drain_s >= 0))
        throw std::invalid_argument("--rate wants 0 to 100000, --duration-s and --timeout-s more than 0, --workers 1 to 1024");
    return options;
}

} // namespace

int main(int argc, char** argv) {
    try {
        net::io_context io(1);
        Soak soak(io, parse_options(argc, argv));
        return soak.run();
    } catch (const std::exception& error) {
        std::cerr << "soak_load: " << error.what() << "\n"
                  << "usage: soak_load --records FILE --rate R --duration-s S --key-host HOST:PORT\n"
                     "         --tunnel-host HOST:PORT --toggle-host HOST:PORT --upstream-ca FILE [--proxy-ca FILE]\n"
                     "         [--proxy IP:PORT] [--api-key VALUE] [--mix KIND=W,...] [--workers N]\n"
                     "         [--timeout-s T] [--drain-s D]\n";
        return 2;
    }
}
