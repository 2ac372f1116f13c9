// bench_load: the client side of bench/proxy.sh. One thread, C++20 coroutines on Asio.
// The same code drives every proxy (Handler through the shim's TCP bridge or on its unix
// socket, tinyproxy, mitmproxy) and the direct baseline, so only the proxy differs.
//
//   bench_load MODE [--proxy tcp:HOST:PORT | --proxy unix:PATH] --target HOST:PORT
//              [--address IP] [--bytes N] [--runs R] [--concurrency C]
//              [--duration-s S] [--warmup-s W] [--ca FILE] [--api-key VALUE]
//
// MODE:
//   throughput   one connection (CONNECT once, when proxied), GET /bytes/N; R runs,
//                each on a new connection; prints the median MiB/s.
//   connect-rps  per request a new connection, CONNECT, one plain GET /small with
//                Connection: close; C clients at once; req/s and latency.
//   tunnel-rps   C keep-alive connections, each CONNECT once, then plain GET /small
//                over and over through the tunnel; req/s and latency.
//   mitm-rps     C keep-alive connections, each CONNECT once and a TLS handshake
//                trusting --ca, then GET /small with x-api-key: VALUE over and over;
//                req/s and latency.
// --target is the origin as the proxy is asked for it (the CONNECT authority, SNI and
// Host); without --proxy the client connects to it directly, at --address if given.
// Requests are counted when they complete inside the S seconds after the W-second
// warm-up. The result is one line of name=value pairs on stdout, ending with the CPU
// time the client itself used (cpu_ms), so the script can tell what else ran meanwhile.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#pragma GCC diagnostic pop

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
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
using Socket = net::generic::stream_protocol::socket;
using Endpoint = net::generic::stream_protocol::endpoint;
using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t kReadChunkBytes = 256 * 1024;

enum class Mode { throughput = 1, connect_rps, tunnel_rps, mitm_rps };

struct Options {
    Mode mode = Mode::throughput;
    std::string proxy;   // "tcp:HOST:PORT", "unix:PATH" or "" (direct)
    std::string target;  // HOST:PORT
    std::string address; // direct only: where the target really is
    std::uint64_t bytes = 1024ull * 1024 * 1024;
    int runs = 3;
    int concurrency = 16;
    double duration_s = 5;
    double warmup_s = 1;
    std::string ca_path;
    std::string api_key;
};

// "host:port" (no IPv6 here: the benchmark is all 127.0.0.1 and names).
std::pair<std::string, std::uint16_t> split_host_port(const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw std::invalid_argument("'" + text + "' is not HOST:PORT");
    return {text.substr(0, colon), static_cast<std::uint16_t>(std::stoul(text.substr(colon + 1)))};
}

class Load {
public:
    Load(net::io_context& io, Options options) : io_(io), options_(std::move(options)) {
        if (options_.proxy.rfind("unix:", 0) == 0) {
            first_hop_ = Endpoint(net::local::stream_protocol::endpoint(options_.proxy.substr(5)));
        } else {
            const bool proxied = options_.proxy.rfind("tcp:", 0) == 0;
            if (!proxied && !options_.proxy.empty())
                throw std::invalid_argument("--proxy wants tcp:HOST:PORT or unix:PATH");
            auto [host, port] = split_host_port(proxied ? options_.proxy.substr(4) : options_.target);
            if (!proxied && !options_.address.empty()) host = options_.address;
            first_hop_ = Endpoint(net::ip::tcp::endpoint(net::ip::make_address(host), port));
            tcp_ = true;
        }
        target_host_ = split_host_port(options_.target).first;
        if (options_.mode == Mode::mitm_rps) {
            tls_.set_verify_mode(ssl::verify_peer);
            tls_.load_verify_file(options_.ca_path);
            static constexpr unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
            SSL_CTX_set_alpn_protos(tls_.native_handle(), kAlpn, sizeof kAlpn);
        }
    }

    // Runs the mode to completion; returns the result line.
    std::string run() {
        if (options_.mode == Mode::throughput) {
            net::co_spawn(io_, throughput(), net::detached);
        } else {
            measure_from_ = SteadyClock::now() + to_duration(options_.warmup_s);
            measure_until_ = measure_from_ + to_duration(options_.duration_s);
            for (int i = 0; i < options_.concurrency; ++i)
                net::co_spawn(io_,
                              options_.mode == Mode::connect_rps  ? connect_client()
                              : options_.mode == Mode::tunnel_rps ? tunnel_client()
                                                                  : mitm_client(),
                              net::detached);
        }
        io_.run();
        if (options_.mode != Mode::throughput) report_rps();
        return line_;
    }

private:
    static SteadyClock::duration to_duration(double seconds) {
        return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
    }

    // A connected socket to the first hop, through CONNECT when proxied. Bytes the proxy
    // sent after its answer (none, for these requests) would be lost, so they are refused.
    net::awaitable<Socket> open() {
        Socket socket(io_);
        co_await socket.async_connect(first_hop_, net::use_awaitable);
        if (tcp_) {
            const int one = 1;
            ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        if (options_.proxy.empty()) co_return socket;
        const std::string request =
            "CONNECT " + options_.target + " HTTP/1.1\r\nHost: " + options_.target + "\r\n\r\n";
        co_await net::async_write(socket, net::buffer(request), net::use_awaitable);
        beast::flat_buffer buffer;
        http::response_parser<http::empty_body> answer;
        answer.skip(true); // a CONNECT answer has no body
        co_await http::async_read_header(socket, buffer, answer, net::use_awaitable);
        if (answer.get().result_int() != 200)
            throw std::runtime_error("CONNECT answered " + std::to_string(answer.get().result_int()));
        if (buffer.size() != 0) throw std::runtime_error("bytes after the CONNECT answer");
        co_return socket;
    }

    net::awaitable<void> throughput() {
        std::vector<double> rates;
        std::vector<char> chunk(kReadChunkBytes);
        try {
            for (int run = 0; run < options_.runs; ++run) {
                Socket socket = co_await open();
                const std::string request = "GET /bytes/" + std::to_string(options_.bytes) +
                                            " HTTP/1.1\r\nHost: " + options_.target + "\r\n\r\n";
                const auto began = SteadyClock::now();
                co_await net::async_write(socket, net::buffer(request), net::use_awaitable);
                std::string head;
                const std::size_t head_bytes =
                    co_await net::async_read_until(socket, net::dynamic_buffer(head), "\r\n\r\n", net::use_awaitable);
                if (head.rfind("HTTP/1.1 200", 0) != 0) throw std::runtime_error("GET /bytes answered " + head.substr(0, 12));
                std::uint64_t left = options_.bytes - (head.size() - head_bytes);
                while (left > 0) {
                    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
                    left -= co_await socket.async_read_some(net::buffer(chunk.data(), want), net::use_awaitable);
                }
                const double seconds = std::chrono::duration<double>(SteadyClock::now() - began).count();
                rates.push_back(static_cast<double>(options_.bytes) / (1024.0 * 1024.0) / seconds);
            }
        } catch (const std::exception& error) {
            std::cerr << "bench_load: throughput: " << error.what() << "\n";
            ++errors_;
        }
        std::vector<double> sorted = rates;
        std::sort(sorted.begin(), sorted.end());
        const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
        std::string all;
        for (double rate : rates) all += (all.empty() ? "" : ",") + format(rate, 1);
        line_ = "mode=throughput bytes=" + std::to_string(options_.bytes) + " runs=" + std::to_string(rates.size()) +
                " errors=" + std::to_string(errors_) + " mib_s=" + format(median, 1) + " all_mib_s=" + all;
    }

    static std::string format(double value, int decimals) {
        char text[64];
        std::snprintf(text, sizeof text, "%.*f", decimals, value);
        return text;
    }

    bool running() const { return SteadyClock::now() < measure_until_ && !gave_up_; }

    void completed(SteadyClock::time_point began) {
        const auto now = SteadyClock::now();
        if (began < measure_from_ || now > measure_until_) return;
        latencies_us_.push_back(
            static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - began).count()));
    }

    void failed(const std::exception& error) {
        if (errors_++ == 0) std::cerr << "bench_load: first error: " << error.what() << "\n";
        // A proxy that refuses everything would otherwise spin until the deadline.
        if (errors_ > 1000 && latencies_us_.empty()) gave_up_ = true;
    }

    net::awaitable<void> connect_client() {
        const std::string request = "GET /small HTTP/1.1\r\nHost: " + options_.target + "\r\nConnection: close\r\n\r\n";
        while (running()) {
            const auto began = SteadyClock::now();
            try {
                Socket socket = co_await open();
                co_await net::async_write(socket, net::buffer(request), net::use_awaitable);
                beast::flat_buffer buffer;
                http::response<http::string_body> response;
                co_await http::async_read(socket, buffer, response, net::use_awaitable);
                if (response.result_int() != 200)
                    throw std::runtime_error("GET /small answered " + std::to_string(response.result_int()));
                completed(began);
            } catch (const std::exception& error) {
                failed(error);
            }
        }
    }

    // `request` over and over on one connection, while the measurement runs and the
    // origin keeps the connection.
    template <class Stream>
    net::awaitable<void> keep_asking(Stream& stream, const std::string& request) {
        beast::flat_buffer buffer;
        while (running()) {
            const auto began = SteadyClock::now();
            co_await net::async_write(stream, net::buffer(request), net::use_awaitable);
            http::response<http::string_body> response;
            co_await http::async_read(stream, buffer, response, net::use_awaitable);
            if (response.result_int() != 200)
                throw std::runtime_error("GET /small answered " + std::to_string(response.result_int()));
            completed(began);
            if (!response.keep_alive()) break;
        }
    }

    net::awaitable<void> tunnel_client() {
        const std::string request = "GET /small HTTP/1.1\r\nHost: " + options_.target + "\r\n\r\n";
        while (running()) {
            try {
                Socket socket = co_await open();
                co_await keep_asking(socket, request);
            } catch (const std::exception& error) {
                failed(error);
            }
        }
    }

    net::awaitable<void> mitm_client() {
        const std::string request = "GET /small HTTP/1.1\r\nHost: " + target_host_ + "\r\nx-api-key: " +
                                    options_.api_key + "\r\nUser-Agent: bench_load\r\n\r\n";
        while (running()) {
            try {
                ssl::stream<Socket> stream(co_await open(), tls_);
                // SSL_set_tlsext_host_name, without the macro's C cast.
                SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                         const_cast<char*>(target_host_.c_str()));
                SSL_set1_host(stream.native_handle(), target_host_.c_str());
                co_await stream.async_handshake(ssl::stream_base::client, net::use_awaitable);
                co_await keep_asking(stream, request);
            } catch (const std::exception& error) {
                failed(error);
            }
        }
    }

    void report_rps() {
        std::sort(latencies_us_.begin(), latencies_us_.end());
        const auto percentile = [&](double p) {
            if (latencies_us_.empty()) return 0.0;
            const auto index = static_cast<std::size_t>(p * static_cast<double>(latencies_us_.size() - 1));
            return latencies_us_[index] / 1000.0;
        };
        const double rps = static_cast<double>(latencies_us_.size()) / options_.duration_s;
        line_ = std::string("mode=") +
                (options_.mode == Mode::connect_rps  ? "connect-rps"
                 : options_.mode == Mode::tunnel_rps ? "tunnel-rps"
                                                     : "mitm-rps") +
                " concurrency=" + std::to_string(options_.concurrency) + " duration_s=" + format(options_.duration_s, 1) +
                " requests=" + std::to_string(latencies_us_.size()) + " errors=" + std::to_string(errors_) +
                " rps=" + format(rps, 0) + " p50_ms=" + format(percentile(0.50), 2) +
                " p99_ms=" + format(percentile(0.99), 2);
    }

    net::io_context& io_;
    const Options options_;
    Endpoint first_hop_;
    bool tcp_ = false;
    std::string target_host_;
    ssl::context tls_{ssl::context::tls_client};
    SteadyClock::time_point measure_from_{};
    SteadyClock::time_point measure_until_{};
    std::vector<std::uint32_t> latencies_us_;
    std::uint64_t errors_ = 0;
    bool gave_up_ = false;
    std::string line_;
};

Options parse_options(int argc, char** argv) {
    if (argc < 2) throw std::invalid_argument("no mode given");
    Options options;
    const std::string_view mode = argv[1];
    if (mode == "throughput") options.mode = Mode::throughput;
    else if (mode == "connect-rps") options.mode = Mode::connect_rps;
    else if (mode == "tunnel-rps") options.mode = Mode::tunnel_rps;
    else if (mode == "mitm-rps") options.mode = Mode::mitm_rps;
    else throw std::invalid_argument("unknown mode '" + std::string(mode) + "'");
    for (int i = 2; i < argc; i += 2) {
        const std::string_view name = argv[i];
        if (i + 1 >= argc) throw std::invalid_argument("option '" + std::string(name) + "' needs a value");
        const std::string value = argv[i + 1];
        if (name == "--proxy") options.proxy = value;
        else if (name == "--target") options.target = value;
        else if (name == "--address") options.address = value;
        else if (name == "--bytes") options.bytes = std::stoull(value);
        else if (name == "--runs") options.runs = std::stoi(value);
        else if (name == "--concurrency") options.concurrency = std::stoi(value);
        else if (name == "--duration-s") options.duration_s = std::stod(value);
        else if (name == "--warmup-s") options.warmup_s = std::stod(value);
        else if (name == "--ca") options.ca_path = value;
        else if (name == "--api-key") options.api_key = value;
        else throw std::invalid_argument("unknown option '" + std::string(name) + "'");
    }
    if (options.target.empty()) throw std::invalid_argument("--target HOST:PORT is required");
    if (options.mode == Mode::mitm_rps && options.ca_path.empty())
        throw std::invalid_argument("mitm-rps needs --ca FILE");
    if (options.runs < 1 || options.concurrency < 1 || options.duration_s <= 0 || options.warmup_s < 0)
        throw std::invalid_argument("--runs and --concurrency want at least 1, --duration-s more than 0");
    return options;
}

} // namespace

int main(int argc, char** argv) {
    try {
        net::io_context io(1);
        Load load(io, parse_options(argc, argv));
        const std::string line = load.run();
        rusage usage{};
        ::getrusage(RUSAGE_SELF, &usage);
        const auto ms = [](const timeval& time) { return time.tv_sec * 1000 + time.tv_usec / 1000; };
        std::cout << line << " cpu_ms=" << ms(usage.ru_utime) + ms(usage.ru_stime) << std::endl;
    } catch (const std::exception& error) {
        std::cerr << "bench_load: " << error.what() << "\n"
                  << "usage: bench_load throughput|connect-rps|tunnel-rps|mitm-rps [--proxy tcp:HOST:PORT|unix:PATH]\n"
                     "         --target HOST:PORT [--address IP] [--bytes N] [--runs R] [--concurrency C]\n"
                     "         [--duration-s S] [--warmup-s W] [--ca FILE] [--api-key VALUE]\n";
        return 2;
    }
    return 0;
}
