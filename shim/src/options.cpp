#include "options.hpp"

#include <sys/un.h>

#include <charconv>
#include <limits>
#include <optional>

namespace handler::shim {
namespace {

std::optional<std::uint64_t> parse_number(std::string_view text, std::uint64_t min,
                                          std::uint64_t max) {
    std::uint64_t value = 0;
    const auto* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc() || stop != end || value < min || value > max)
        return std::nullopt;
    return value;
}

// sun_path holds the path and its terminating NUL; a longer path would be silently cut
// by connect(), so it is refused here. Returns the complaint, or "".
std::string check_socket_path(std::string_view path) {
    if (path.size() < sizeof(sockaddr_un{}.sun_path)) return {};
    return "socket path '" + std::string(path) + "' is longer than " +
           std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) +
           " bytes, the limit for a unix socket";
}

} // namespace

std::string usage_text() {
    return "usage: handler-shim --connect SOCKET_PATH [--tty] [--rows N] [--cols N]\n"
           "                    [--ring-bytes N] [--exit-grace-ms N] [--workdir DIR]\n"
           "                    [--proxy-port PORT --proxy-socket PROXY_SOCKET_PATH]\n"
           "                    -- PROGRAM [ARGS...]\n";
}

ParseResult parse_options(const std::vector<std::string_view>& args) {
    ParseResult result;
    Options& options = result.options;
    const auto fail = [&](std::string message) {
        result.error = std::move(message);
        return result;
    };

    std::size_t index = 0;
    bool saw_separator = false;
    while (index < args.size()) {
        std::string_view arg = args[index++];
        if (arg == "--") {
            saw_separator = true;
            break;
        }
        if (arg == "--help" || arg == "-h") {
            result.help = true;
            return result;
        }
        if (arg == "--tty") {
            options.tty = true;
            continue;
        }
        if (arg.substr(0, 2) != "--")
            return fail("unexpected argument '" + std::string(arg) +
                        "' (the program and its arguments go after '--')");

        // Every other option takes a value, as "--name VALUE" or "--name=VALUE".
        std::string_view name = arg;
        std::optional<std::string_view> value;
        if (const auto equals = arg.find('='); equals != std::string_view::npos) {
            name = arg.substr(0, equals);
            value = arg.substr(equals + 1);
        }
        const bool known = name == "--connect" || name == "--rows" || name == "--cols" ||
                           name == "--ring-bytes" || name == "--exit-grace-ms" ||
                           name == "--workdir" || name == "--proxy-port" ||
                           name == "--proxy-socket";
        if (!known) return fail("unknown option '" + std::string(name) + "'");
        if (!value) {
            if (index == args.size()) return fail("option '" + std::string(name) + "' needs a value");
            value = args[index++];
        }

        const auto number = [&](std::uint64_t min, std::uint64_t max) {
            auto parsed = parse_number(*value, min, max);
            if (!parsed)
                result.error = "option '" + std::string(name) + "' wants a whole number from " +
                               std::to_string(min) + " to " + std::to_string(max) + ", got '" +
                               std::string(*value) + "'";
            return parsed.value_or(0);
        };
        if (name == "--connect") {
            if (value->empty()) return fail("option '--connect' needs a socket path");
            if (auto error = check_socket_path(*value); !error.empty()) return fail(error);
            options.socket_path = std::string(*value);
        } else if (name == "--proxy-port") {
            options.proxy_port = static_cast<std::uint16_t>(number(1, 65535));
        } else if (name == "--proxy-socket") {
            // Absolute: a relative path would mean whatever directory podman happened
            // to start the shim in.
            if (value->empty() || value->front() != '/')
                return fail("option '--proxy-socket' needs an absolute socket path, got '" +
                            std::string(*value) + "'");
            if (auto error = check_socket_path(*value); !error.empty()) return fail(error);
            options.proxy_socket = std::string(*value);
        } else if (name == "--rows") {
            options.rows = static_cast<std::uint16_t>(number(1, 65535));
        } else if (name == "--cols") {
            options.cols = static_cast<std::uint16_t>(number(1, 65535));
        } else if (name == "--ring-bytes") {
            options.ring_bytes = static_cast<std::size_t>(number(1, std::uint64_t{1} << 30));
        } else if (name == "--exit-grace-ms") {
            options.exit_grace_ms = number(0, 24ull * 3600 * 1000);
        } else {
            if (value->empty()) return fail("option '--workdir' needs a directory");
            options.workdir = std::string(*value);
        }
        if (!result.error.empty()) return result;
    }

    if (options.socket_path.empty()) return fail("missing '--connect SOCKET_PATH'");
    if ((options.proxy_port == 0) != options.proxy_socket.empty())
        return fail("options '--proxy-port' and '--proxy-socket' go together: give both or "
                    "neither");
    if (!saw_separator || index == args.size())
        return fail("no program given: put it after '--', as in '-- PROGRAM [ARGS...]'");
    for (; index < args.size(); ++index) options.command.emplace_back(args[index]);
    if (options.command.front().empty()) return fail("the program name is empty");
    return result;
}

} // namespace handler::shim
