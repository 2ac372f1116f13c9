#include "network/client_hello.hpp"

#include <cstdint>
#include <set>

namespace handler::network {
namespace {

constexpr unsigned char kHandshakeRecord = 22;
constexpr unsigned char kClientHelloMessage = 1;
constexpr std::size_t kRecordHeaderBytes = 5;
constexpr std::size_t kMaxRecordBytes = 16 * 1024; // 2^14, RFC 8446 5.1
constexpr std::uint16_t kServerName = 0;
constexpr std::uint16_t kEncryptedClientHello = 0xfe0d;
constexpr std::uint16_t kEncryptedServerName = 0xffce;
constexpr unsigned char kHostName = 0;

// Big-endian fields taken from the front of a view; every take checks what is left.
class Reader {
public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}
    bool empty() const { return bytes_.empty(); }
    std::size_t size() const { return bytes_.size(); }
    bool number(std::size_t width, std::size_t& value) {
        if (bytes_.size() < width) return false;
        value = 0;
        for (std::size_t i = 0; i < width; ++i) value = value << 8 | static_cast<unsigned char>(bytes_[i]);
        bytes_.remove_prefix(width);
        return true;
    }
    bool bytes(std::size_t count, std::string_view& out) {
        if (bytes_.size() < count) return false;
        out = bytes_.substr(0, count);
        bytes_.remove_prefix(count);
        return true;
    }
    // A vector with a length prefix of `width` bytes, whose length is within [low, high].
    bool vector(std::size_t width, std::size_t low, std::size_t high, std::string_view& out) {
        std::size_t length = 0;
        return number(width, length) && length >= low && length <= high && bytes(length, out);
    }

private:
    std::string_view bytes_;
};

ClientHello malformed(std::string problem) {
    ClientHello hello;
    hello.status = HelloStatus::malformed;
    hello.problem = std::move(problem);
    return hello;
}

// RFC 6066 3: a list of names by type, of which only host_name exists. OpenSSL takes
// exactly one entry, and so does this: a second name would be one the proxy did not read.
bool read_server_name(std::string_view data, ClientHello& hello) {
    Reader extension(data);
    std::string_view list;
    if (!extension.vector(2, 1, 0xffff, list) || !extension.empty()) return false;
    Reader names(list);
    std::size_t type = 0;
    std::string_view name;
    if (!names.number(1, type) || type != kHostName || !names.vector(2, 1, 0xffff, name) || !names.empty())
        return false;
    hello.server_name = std::string(name);
    return true;
}

ClientHello read_message(std::string_view body) {
    Reader reader(body);
    std::size_t version = 0;
    std::string_view skipped;
    if (!reader.number(2, version) || version >> 8 != 3) return malformed("its version is not TLS's");
    if (!reader.bytes(32, skipped)) return malformed("it ends inside its random");
    if (!reader.vector(1, 0, 32, skipped)) return malformed("its session id is malformed");
    std::string_view suites;
    if (!reader.vector(2, 2, 0xfffe, suites) || suites.size() % 2 != 0) return malformed("its cipher suites are malformed");
    if (!reader.vector(1, 1, 0xff, skipped)) return malformed("its compression methods are malformed");
    ClientHello hello;
    hello.status = HelloStatus::complete;
    if (reader.empty()) return hello; // TLS 1.2 allows a hello without extensions
    std::string_view extensions;
    if (!reader.vector(2, 0, 0xffff, extensions) || !reader.empty())
        return malformed("its extensions do not fill the rest of it exactly");
    Reader list(extensions);
    std::set<std::size_t> seen;
    while (!list.empty()) {
        std::size_t type = 0;
        std::string_view data;
        if (!list.number(2, type) || !list.vector(2, 0, 0xffff, data)) return malformed("an extension is cut short");
        // RFC 8446 4.2: one of each. Two server names would be two names.
        if (!seen.insert(type).second) return malformed("it has extension " + std::to_string(type) + " twice");
        if (type == kServerName && !read_server_name(data, hello))
            return malformed("its server_name is not exactly one host name");
        if (type == kEncryptedClientHello || type == kEncryptedServerName) hello.encrypted = true;
    }
    return hello;
}

} // namespace

ClientHello read_client_hello(std::string_view bytes, std::size_t limit_bytes) {
    if (bytes.empty()) return {};
    if (static_cast<unsigned char>(bytes[0]) != kHandshakeRecord) {
        ClientHello hello;
        hello.status = HelloStatus::not_tls;
        return hello;
    }
    // The handshake message, gathered from the fragments of consecutive records. Its
    // first bytes say what it is and how long it will be, before the rest has come.
    std::string message;
    std::size_t body = 0;
    const auto start_problem = [&]() -> std::optional<std::string> {
        if (!message.empty() && static_cast<unsigned char>(message[0]) != kClientHelloMessage)
            return "the first handshake message is not a ClientHello";
        if (message.size() < 4) return std::nullopt;
        body = static_cast<std::size_t>(static_cast<unsigned char>(message[1])) << 16 |
               static_cast<std::size_t>(static_cast<unsigned char>(message[2])) << 8 |
               static_cast<unsigned char>(message[3]);
        if (4 + body > limit_bytes) return "it is over " + std::to_string(limit_bytes) + " bytes";
        return std::nullopt;
    };
    std::size_t at = 0;
    for (;;) {
        const std::string_view rest = bytes.substr(at);
        if (!rest.empty() && static_cast<unsigned char>(rest[0]) != kHandshakeRecord)
            return malformed("a record of another type came before the ClientHello ended");
        if (rest.size() >= 2 && static_cast<unsigned char>(rest[1]) != 3)
            return malformed("a record's version is not TLS's");
        if (rest.size() < kRecordHeaderBytes) return {};
        const std::size_t length =
            static_cast<std::size_t>(static_cast<unsigned char>(rest[3])) << 8 | static_cast<unsigned char>(rest[4]);
        if (length == 0 || length > kMaxRecordBytes) return malformed("a record is empty or over 16 KiB");
        if (at + kRecordHeaderBytes + length > limit_bytes)
            return malformed("it is over " + std::to_string(limit_bytes) + " bytes");
        if (rest.size() < kRecordHeaderBytes + length) {
            message.append(rest.substr(kRecordHeaderBytes));
            if (auto problem = start_problem()) return malformed(std::move(*problem));
            return {};
        }
        message.append(rest.substr(kRecordHeaderBytes, length));
        at += kRecordHeaderBytes + length;
        if (auto problem = start_problem()) return malformed(std::move(*problem));
        if (message.size() < 4 || message.size() < 4 + body) continue;
        // A record may go on past the hello only with the next handshake message, which a
        // client sends only after the server's answer.
        if (message.size() > 4 + body) return malformed("more handshake bytes follow it in its record");
        auto hello = read_message(std::string_view(message).substr(4, body));
        hello.record_bytes = at;
        return hello;
    }
}

std::optional<std::string> hello_problem(const ClientHello& hello, const Target& connect) {
    const std::string tunnel = "the tunnel was opened (CONNECT) to " + authority_text(connect);
    if (hello.status == HelloStatus::malformed) return "its TLS ClientHello is malformed (" + hello.problem + ")";
    if (hello.encrypted)
        return "its TLS ClientHello is encrypted (Encrypted ClientHello), which hides the host it is for; " + tunnel;
    if (!hello.server_name)
        return connect.ip ? std::nullopt
                          : std::optional<std::string>("its TLS ClientHello names no host (no SNI); " + tunnel);
    const auto named = parse_target(*hello.server_name, connect.port);
    if (!named) return "its TLS ClientHello's SNI is not a host name; " + tunnel;
    if (named->ip || connect.ip || named->host != connect.host)
        return "its TLS ClientHello is for " + named->host + " (SNI), but " + tunnel;
    return std::nullopt;
}

} // namespace handler::network
