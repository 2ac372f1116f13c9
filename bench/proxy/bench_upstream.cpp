// bench_upstream: the origin server behind the proxies in bench/proxy.sh. HTTP and HTTPS
// on 127.0.0.1, keep-alive, one thread:
//   GET /small     a 128-byte body
//   GET /bytes/N   N bytes, streamed from one static buffer
//   GET /echo-key  "key=" and the x-api-key it got, as a careless error message quotes a
//                  key (bench/soak.sh: the proxy must mask the real key on the way back)
// On HTTPS it checks that every request carries the real key in x-api-key (the proxy
// under test swapped the stand-in for it) and answers 401 when not; the counts go to
// stdout and to --report at SIGTERM, so the script can say whether interception worked.
//
//   bench_upstream --http-port P --https-port Q --cert LEAF.pem --key LEAF.key
//                  --expect-key REAL [--report FILE]
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#pragma GCC diagnostic pop

#include <charconv>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

constexpr std::size_t kSmallBodyBytes = 128;
constexpr std::size_t kChunkBytes = 256 * 1024;

struct Options {
    std::uint16_t http_port = 0;
    std::uint16_t https_port = 0;
    std::string certificate_path;
    std::string key_path;
    std::string expect_key;
    std::string report_path;
};

struct Counters {
    std::uint64_t http_requests = 0;
    std::uint64_t https_requests = 0;
    std::uint64_t key_ok = 0;
    std::uint64_t key_mismatch = 0;
    std::string last_mismatch; // what arrived instead, for the report
};

std::string head(unsigned status, const char* reason, std::uint64_t length, bool keep_alive) {
    std::string text = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                       "\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                       std::to_string(length) + "\r\n";
    if (!keep_alive) text += "Connection: close\r\n";
    return text + "\r\n";
}

// "/bytes/N": true, with N in `bytes`.
bool parse_bytes_target(std::string_view target, std::uint64_t& bytes) {
    constexpr std::string_view kPrefix = "/bytes/";
    if (target.substr(0, kPrefix.size()) != kPrefix) return false;
    target.remove_prefix(kPrefix.size());
    const auto [end, error] = std::from_chars(target.data(), target.data() + target.size(), bytes);
    return error == std::errc() && end == target.data() + target.size();
}

template <class Stream>
net::awaitable<void> serve(Stream& stream, bool tls, const Options& options, Counters& counters) {
    static const std::string chunk(kChunkBytes, 'x');
    static const std::string small(kSmallBodyBytes, 's');
    beast::flat_buffer buffer;
    for (;;) {
        http::request<http::empty_body> request;
        boost::system::error_code error;
        co_await http::async_read(stream, buffer, request, net::redirect_error(net::use_awaitable, error));
        if (error) co_return;
        ++(tls ? counters.https_requests : counters.http_requests);
        const bool keep_alive = request.keep_alive();
        if (tls && !options.expect_key.empty()) {
            const auto key = request["x-api-key"];
            if (key == options.expect_key) {
                ++counters.key_ok;
            } else {
                ++counters.key_mismatch;
                counters.last_mismatch = std::string(key);
                const std::string body = "x-api-key is not the real key\n";
                const std::string reply = head(401, "Unauthorized", body.size(), keep_alive) + body;
                co_await net::async_write(stream, net::buffer(reply), net::redirect_error(net::use_awaitable, error));
                if (error || !keep_alive) co_return;
                continue;
            }
        }
        std::uint64_t bytes = 0;
        if (request.target() == "/small") {
            const std::string reply = head(200, "OK", small.size(), keep_alive) + small;
            co_await net::async_write(stream, net::buffer(reply), net::redirect_error(net::use_awaitable, error));
        } else if (request.target() == "/echo-key") {
            const std::string body = "key=" + std::string(request["x-api-key"]);
            const std::string reply = head(200, "OK", body.size(), keep_alive) + body;
            co_await net::async_write(stream, net::buffer(reply), net::redirect_error(net::use_awaitable, error));
        } else if (parse_bytes_target(request.target(), bytes)) {
            const std::string reply = head(200, "OK", bytes, keep_alive);
            co_await net::async_write(stream, net::buffer(reply), net::redirect_error(net::use_awaitable, error));
            while (!error && bytes > 0) {
                const std::size_t now = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, chunk.size()));
                co_await net::async_write(stream, net::buffer(chunk.data(), now),
                                          net::redirect_error(net::use_awaitable, error));
                bytes -= now;
            }
        } else {
            const std::string body = "unknown path\n";
            const std::string reply = head(404, "Not Found", body.size(), keep_alive) + body;
            co_await net::async_write(stream, net::buffer(reply), net::redirect_error(net::use_awaitable, error));
        }
        if (error || !keep_alive) co_return;
    }
}

net::awaitable<void> plain_connection(tcp::socket socket, const Options& options, Counters& counters) {
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    co_await serve(socket, false, options, counters);
    socket.shutdown(tcp::socket::shutdown_send, ignored);
}

net::awaitable<void> tls_connection(tcp::socket socket, ssl::context& context, const Options& options,
                                    Counters& counters) {
    boost::system::error_code error;
    socket.set_option(tcp::no_delay(true), error);
    ssl::stream<tcp::socket> stream(std::move(socket), context);
    co_await stream.async_handshake(ssl::stream_base::server, net::redirect_error(net::use_awaitable, error));
    if (error) co_return;
    co_await serve(stream, true, options, counters);
}

template <class Connection>
net::awaitable<void> accept_loop(tcp::acceptor& acceptor, Connection connection) {
    for (;;) {
        boost::system::error_code error;
        tcp::socket socket = co_await acceptor.async_accept(net::redirect_error(net::use_awaitable, error));
        if (error == net::error::operation_aborted) co_return;
        if (error) continue; // EMFILE and friends: try again
        net::co_spawn(acceptor.get_executor(), connection(std::move(socket)), net::detached);
    }
}

bool parse_options(int argc, char** argv, Options& options) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view name = argv[i];
        const std::string value = argv[i + 1];
        if (name == "--http-port") options.http_port = static_cast<std::uint16_t>(std::stoul(value));
        else if (name == "--https-port") options.https_port = static_cast<std::uint16_t>(std::stoul(value));
        else if (name == "--cert") options.certificate_path = value;
        else if (name == "--key") options.key_path = value;
        else if (name == "--expect-key") options.expect_key = value;
        else if (name == "--report") options.report_path = value;
        else return false;
    }
    return argc % 2 == 1 && options.http_port != 0 && options.https_port != 0 && !options.certificate_path.empty() &&
           !options.key_path.empty();
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    bool parsed = false;
    try {
        parsed = parse_options(argc, argv, options);
    } catch (const std::exception&) { // a port that is not a number
    }
    if (!parsed) {
        std::cerr << "usage: bench_upstream --http-port P --https-port Q --cert LEAF.pem --key LEAF.key"
                     " [--expect-key REAL] [--report FILE]\n";
        return 2;
    }
    try {
        net::io_context io(1);
        ssl::context context(ssl::context::tls_server);
        context.use_certificate_chain_file(options.certificate_path);
        context.use_private_key_file(options.key_path, ssl::context::pem);

        const auto loopback = net::ip::make_address("127.0.0.1");
        tcp::acceptor http_acceptor(io, {loopback, options.http_port});
        tcp::acceptor https_acceptor(io, {loopback, options.https_port});
        Counters counters;
        net::co_spawn(io,
                      accept_loop(http_acceptor,
                                  [&](tcp::socket socket) {
                                      return plain_connection(std::move(socket), options, counters);
                                  }),
                      net::detached);
        net::co_spawn(io,
                      accept_loop(https_acceptor,
                                  [&](tcp::socket socket) {
                                      return tls_connection(std::move(socket), context, options, counters);
                                  }),
                      net::detached);
        net::signal_set signals(io, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
        io.run();

        std::string report = "http_requests=" + std::to_string(counters.http_requests) +
                             " https_requests=" + std::to_string(counters.https_requests) +
                             " key_ok=" + std::to_string(counters.key_ok) +
                             " key_mismatch=" + std::to_string(counters.key_mismatch);
        if (counters.key_mismatch > 0) report += " last_mismatch='" + counters.last_mismatch + "'";
        std::cout << "bench_upstream: " << report << std::endl;
        if (!options.report_path.empty()) std::ofstream(options.report_path) << report << "\n";
    } catch (const std::exception& error) {
        std::cerr << "bench_upstream: " << error.what() << "\n";
        return 1;
    }
    return 0;
}
