#include "settings/settings.hpp"

#include "network/policy.hpp"

#include "core/paths.hpp"

#include <toml++/toml.h>

#include <arpa/inet.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <netinet/in.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace handler::settings {
namespace fs = std::filesystem;

std::string_view to_string(LogLevel level) {
    switch (level) {
    case LogLevel::trace: return "trace";
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warn: return "warn";
    case LogLevel::error: return "error";
    }
    return "info";
}

std::optional<LogLevel> parse_log_level(std::string_view text) {
    for (auto level : {LogLevel::trace, LogLevel::debug, LogLevel::info, LogLevel::warn,
                       LogLevel::error})
        if (text == to_string(level)) return level;
    return std::nullopt;
}

namespace {

// A TOML basic string. Our own rather than toml++'s formatter, which prefers 'literal'
// strings: the written file should look like the examples in the docs.
std::string quote(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20 || byte == 0x7f) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

// What the user wrote, for "got ..." in messages: scalars as written, containers by kind.
std::string describe(const toml::node& node) {
    if (const auto* text = node.as_string()) return quote(text->get());
    if (const auto* integer = node.as_integer()) return std::to_string(integer->get());
    if (const auto* boolean = node.as_boolean()) return boolean->get() ? "true" : "false";
    if (const auto* floating = node.as_floating_point()) {
        std::ostringstream out;
        out << *floating;
        return out.str();
    }
    if (node.is_table()) return "a table";
    if (node.is_array()) return "an array";
    return "a date or time";
}

struct Problem {
    toml::source_position where;
    std::string text; // "[api] port: expected ..., got ..."
};

// Collects every problem in the file so the user fixes them in one go, then reports
// them in file order.
class Checker {
public:
    explicit Checker(std::string file) : file_(std::move(file)) {}

    void add(const toml::source_region& where, std::string text) {
        problems_.push_back({where.begin, std::move(text)});
    }
    bool ok() const { return problems_.empty(); }

    std::string message() {
        std::stable_sort(problems_.begin(), problems_.end(), [](const auto& a, const auto& b) {
            return a.where.line != b.where.line ? a.where.line < b.where.line
                                                : a.where.column < b.where.column;
        });
        std::string out;
        for (const auto& problem : problems_) {
            if (!out.empty()) out += '\n';
            out += file_ + ":" + std::to_string(problem.where.line) + ":" +
                   std::to_string(problem.where.column) + ": " + problem.text;
        }
        return out;
    }

    void boolean(const toml::node& node, const std::string& key, bool& out) {
        if (const auto* value = node.as_boolean()) {
            out = value->get();
            return;
        }
        add(node.source(), key + ": expected true or false, got " + describe(node));
    }

    template <class Int>
    void integer(const toml::node& node, const std::string& key, std::int64_t min,
                 std::int64_t max, Int& out) {
        if (const auto* value = node.as_integer(); value && value->get() >= min &&
                                                  value->get() <= max) {
            out = static_cast<Int>(value->get());
            return;
        }
        add(node.source(), key + ": expected an integer from " + std::to_string(min) + " to " +
                               std::to_string(max) + ", got " + describe(node));
    }

    void log_level(const toml::node& node, const std::string& key, LogLevel& out) {
        if (const auto* value = node.as_string())
            if (auto level = parse_log_level(value->get())) {
                out = *level;
                return;
            }
        add(node.source(), key + ": expected one of \"trace\", \"debug\", \"info\", \"warn\", "
                                 "\"error\", got " + describe(node));
    }

    void address(const toml::node& node, const std::string& key, std::string& out) {
        const auto* value = node.as_string();
        if (value == nullptr) {
            add(node.source(), key + ": expected a loopback address such as \"127.0.0.1\" or "
                                     "\"::1\", got " + describe(node));
            return;
        }
        in_addr v4{};
        in6_addr v6{};
        const std::string& text = value->get();
        const bool loopback =
            (::inet_pton(AF_INET, text.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
            (::inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
        if (!loopback) {
            add(node.source(), key + ": expected a loopback address (127.0.0.0/8 or ::1), got " +
                                   describe(node) +
                                   "; the API must not be reachable from other machines");
            return;
        }
        out = text;
    }

    // A local image reference ("localhost/name:tag"); podman checks the rest at start.
    void image(const toml::node& node, const std::string& key, std::string& out) {
        const auto* text = node.as_string();
        const bool plausible = text != nullptr && !text->get().empty() &&
                               text->get().front() != '-' &&
                               text->get().find_first_of(" \t\n") == std::string::npos;
        if (!plausible) {
            add(node.source(), key + ": expected an image reference such as "
                                     "\"localhost/my-image:1\", got " + describe(node));
            return;
        }
        out = text->get();
    }

    void id_list(const toml::node& node, const std::string& key, std::vector<std::string>& out) {
        const auto* array = node.as_array();
        if (array == nullptr) {
            add(node.source(), key + ": expected a list of plugin ids such as [\"codex\"], got " +
                                   describe(node));
            return;
        }
        std::vector<std::string> ids;
        for (std::size_t i = 0; i < array->size(); ++i) {
            const toml::node& item = *array->get(i);
            const auto* text = item.as_string();
            if (text == nullptr || text->get().empty()) {
                add(item.source(), key + "[" + std::to_string(i) +
                                       "]: expected a plugin id (a non-empty string), got " +
                                       describe(item));
                continue;
            }
            ids.push_back(text->get());
        }
        out = std::move(ids);
    }

private:
    std::string file_;
    std::vector<Problem> problems_;
};

std::string known_list(const std::vector<std::string_view>& keys) {
    std::string out;
    for (const auto key : keys) {
        if (!out.empty()) out += ", ";
        out += key;
    }
    return out;
}

// Format 1 (pre-release): flat keys at the top level.
void check_format_1(const toml::table& root, Checker& check, Parsed& parsed) {
    for (const auto& [key, node] : root) {
        const std::string name(key.str());
        if (name == "format") continue;
        if (node.is_table()) {
            check.add(key.source(),
                      "[" + name + "]: this file has no `format` key, so it is read as the "
                      "format 1 layout, which has no sections; add `format = 2` at the top");
        } else if (name == "log_level") {
            check.log_level(node, name, parsed.settings.daemon.log_level);
            parsed.explicit_keys.push_back("daemon.log_level");
        } else if (name == "api_port") {
            check.integer(node, name, 0, 65535, parsed.settings.api.port);
            parsed.explicit_keys.push_back("api.port");
        } else if (name == "api_tcp") {
            check.boolean(node, name, parsed.settings.api.tcp);
            parsed.explicit_keys.push_back("api.tcp");
        } else {
            check.add(key.source(), name + ": unknown setting in a format 1 file (known: "
                                           "log_level, api_port, api_tcp)");
        }
    }
}

// Format 1 keys someone may carry over by hand into a current file.
const std::map<std::string, std::string, std::less<>> kMovedKeys = {
    {"log_level", "[daemon] log_level"},
    {"api_port", "[api] port"},
    {"api_tcp", "[api] tcp"},
};

void check_format_2(const toml::table& root, Checker& check, Parsed& parsed) {
    Settings& s = parsed.settings;
    auto section = [&](const toml::key& key, const toml::node& node,
                       const std::vector<std::string_view>& known, auto&& on_key) {
        const std::string name(key.str());
        const auto* table = node.as_table();
        if (table == nullptr) {
            check.add(node.source(), "[" + name + "]: expected a section (a table), got " +
                                         describe(node));
            return;
        }
        for (const auto& [child_key, child] : *table) {
            const std::string child_name(child_key.str());
            const std::string label = "[" + name + "] " + child_name;
            if (std::find(known.begin(), known.end(), child_name) == known.end()) {
                check.add(child_key.source(), label + ": unknown setting (known in [" + name +
                                                  "]: " + known_list(known) + ")");
                continue;
            }
            parsed.explicit_keys.push_back(name + "." + child_name);
            on_key(child_name, label, child);
        }
    };

    for (const auto& [key, node] : root) {
        const std::string name(key.str());
        if (name == "format") continue;
        if (name == "daemon") {
            section(key, node, {"log_level"},
                    [&](const std::string&, const std::string& label, const toml::node& value) {
                        check.log_level(value, label, s.daemon.log_level);
                    });
        } else if (name == "api") {
            section(key, node, {"tcp", "address", "port", "body_limit_bytes", "read_timeout_ms"},
                    [&](const std::string& child, const std::string& label,
                        const toml::node& value) {
                        if (child == "tcp") check.boolean(value, label, s.api.tcp);
                        else if (child == "address") check.address(value, label, s.api.address);
                        else if (child == "port") check.integer(value, label, 0, 65535, s.api.port);
                        else if (child == "body_limit_bytes")
                            check.integer(value, label, kMinBodyLimitBytes, kMaxBodyLimitBytes,
                                          s.api.body_limit_bytes);
                        else
                            check.integer(value, label, kMinReadTimeoutMs, kMaxReadTimeoutMs,
                                          s.api.read_timeout_ms);
                    });
        } else if (name == "plugins") {
            section(key, node, {"disabled"},
                    [&](const std::string&, const std::string& label, const toml::node& value) {
                        check.id_list(value, label, s.plugins.disabled);
                    });
        } else if (name == "network") {
            section(key, node, {"proxy_port", "resolve"},
                    [&](const std::string& child, const std::string& label,
                        const toml::node& value) {
                        if (child == "proxy_port") {
                            check.integer(value, label, 1024, 65535, s.network.proxy_port);
                            return;
                        }
                        const auto* table = value.as_table();
                        if (table == nullptr) {
                            check.add(value.source(), label + ": expected a table of name = \"address\", "
                                                              "e.g. { \"api.example.test\" = \"127.0.0.1\" }");
                            return;
                        }
                        for (const auto& [name_key, address] : *table) {
                            const auto* text = address.as_string();
                            const std::string pinned(name_key.str());
                            const std::string entry = label + "." + pinned;
                            // "name" = "address", or "name:port" = "address:port" (like curl
                            // --connect-to: a test server on another port than the real one).
                            const bool with_port = pinned.find(':') != std::string::npos;
                            if (with_port && !network::parse_endpoint(pinned, /*host_may_be_name=*/true)) {
                                check.add(name_key.source(), entry + ": expected a name or name:port (1 to 65535)");
                                continue;
                            }
                            const bool valid = text != nullptr && (with_port ? network::parse_endpoint(text->get(), false).has_value()
                                                                             : network::parse_address(text->get()).has_value());
                            if (!valid) {
                                check.add(address.source(),
                                          entry + (with_port ? ": expected an address and port such as \"127.0.0.1:8443\", got "
                                                             : ": expected an IP address such as \"127.0.0.1\", got ") +
                                              describe(address));
                                continue;
                            }
                            s.network.resolve[pinned] = text->get();
                        }
                    });
        } else if (name == "sessions") {
            section(key, node,
                    {"image", "log_limit_bytes", "headless_timeout_minutes", "tmp_size_mib", "home_size_mib",
                     "process_limit", "memory_limit_mib"},
                    [&](const std::string& child, const std::string& label,
                        const toml::node& value) {
                        if (child == "image") check.image(value, label, s.sessions.image);
                        else if (child == "log_limit_bytes")
                            check.integer(value, label, kMinLogLimitBytes, kMaxLogLimitBytes,
                                          s.sessions.log_limit_bytes);
                        else if (child == "tmp_size_mib")
                            check.integer(value, label, kMinTmpfsSizeMib, kMaxTmpfsSizeMib, s.sessions.limits.tmp_size_mib);
                        else if (child == "home_size_mib")
                            check.integer(value, label, kMinTmpfsSizeMib, kMaxTmpfsSizeMib, s.sessions.limits.home_size_mib);
                        else if (child == "process_limit")
                            check.integer(value, label, kMinProcessLimit, kMaxProcessLimit, s.sessions.limits.process_limit);
                        else if (child == "memory_limit_mib")
                            check.integer(value, label, std::uint64_t{0}, kMaxMemoryLimitMib,
                                          s.sessions.limits.memory_limit_mib);
                        else
                            check.integer(value, label, std::uint64_t{0}, kMaxHeadlessTimeoutMinutes,
                                          s.sessions.headless_timeout_minutes);
                    });
        } else if (auto moved = kMovedKeys.find(name); moved != kMovedKeys.end()) {
            check.add(key.source(), name + ": this is a format 1 setting; in format " +
                                        std::to_string(kCurrentFormat) + " it is " +
                                        moved->second);
        } else {
            check.add(key.source(), name + ": unknown setting (known: format, [daemon], [api], "
                                           "[plugins], [sessions], [network])");
        }
    }
}

std::string backup_name(const fs::path& file, int format, int number) {
    std::string name = file.filename().string() + ".v" + std::to_string(format);
    if (number > 1) name += "." + std::to_string(number);
    return name + ".bak";
}

// Copies the original next to it under the first free backup name. O_EXCL rather than
// an exists() check so two handlerd started at once cannot overwrite each other's backup.
Result<fs::path> write_backup(const fs::path& file, int format, std::string_view contents,
                              unsigned mode) {
    for (int number = 1; number < 1000; ++number) {
        const fs::path backup = file.parent_path() / backup_name(file, format, number);
        const int fd = ::open(backup.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                              mode);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0)
            return make_error(ErrorCode::internal, "cannot back up " + file.string() + " to " +
                                                       backup.string() + ": " +
                                                       std::strerror(errno));
        std::size_t written = 0;
        while (written < contents.size()) {
            const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) break;
            written += static_cast<std::size_t>(n);
        }
        // The backup must be on disk before the original is replaced.
        const bool complete = written == contents.size() && ::fsync(fd) == 0;
        const std::string reason = std::strerror(errno);
        ::close(fd);
        if (!complete) {
            ::unlink(backup.c_str());
            return make_error(ErrorCode::internal, "cannot back up " + file.string() + " to " +
                                                       backup.string() + ": " + reason);
        }
        return backup;
    }
    return make_error(ErrorCode::internal, "cannot back up " + file.string() +
                                               ": 999 backups exist already; remove old ones");
}

} // namespace

Result<Parsed> parse(std::string_view text, const fs::path& file) {
    const std::string file_name = file.string();
    toml::table root;
    try {
        root = toml::parse(text, std::string_view(file_name));
    } catch (const toml::parse_error& error) {
        return make_error(ErrorCode::invalid_argument,
                          file_name + ":" + std::to_string(error.source().begin.line) + ":" +
                              std::to_string(error.source().begin.column) +
                              ": not valid TOML: " + std::string(error.description()));
    }

    Checker check(file_name);
    Parsed parsed;
    parsed.format = 1;
    if (const toml::node* format = root.get("format")) {
        const auto* number = format->as_integer();
        if (number == nullptr || number->get() < 1) {
            check.add(format->source(), "format: expected a positive integer, got " +
                                            describe(*format));
            return make_error(ErrorCode::invalid_argument, check.message());
        }
        if (number->get() > kCurrentFormat) {
            check.add(format->source(),
                      "format: this file is format " + std::to_string(number->get()) +
                          ", written by a newer handlerd; this one understands formats 1 to " +
                          std::to_string(kCurrentFormat) +
                          ". Upgrade handlerd, or restore the backup (" +
                          file.filename().string() + ".v" + std::to_string(kCurrentFormat) +
                          ".bak) that the newer version made when it converted this file");
            return make_error(ErrorCode::incompatible, check.message());
        }
        parsed.format = static_cast<int>(number->get());
    }

    if (parsed.format == 1) check_format_1(root, check, parsed);
    else check_format_2(root, check, parsed);
    if (!check.ok()) return make_error(ErrorCode::invalid_argument, check.message());
    return parsed;
}

std::string render(const Settings& settings, const std::vector<std::string>& explicit_keys) {
    const Settings defaults;
    std::ostringstream out;
    // A setting the user chose is written; any other is shown commented out with its
    // default, so a later handlerd with a better default still applies it.
    auto line = [&](std::string_view key, const std::string& comment, const std::string& value,
                    const std::string& default_value, std::string_view section) {
        const std::string full = std::string(section) + "." + std::string(key);
        const bool chosen =
            std::find(explicit_keys.begin(), explicit_keys.end(), full) != explicit_keys.end();
        out << "# " << comment << "\n";
        out << (chosen ? "" : "# ") << key << " = " << (chosen ? value : default_value) << "\n";
    };
    auto list = [](const std::vector<std::string>& ids) {
        std::string text = "[";
        for (std::size_t i = 0; i < ids.size(); ++i) text += (i ? ", " : "") + quote(ids[i]);
        return text + "]";
    };
    auto boolean = [](bool value) { return std::string(value ? "true" : "false"); };

    out << "# Handler settings, read by handlerd when it starts (docs/configuration.md).\n"
           "# A commented-out setting shows its default; remove the '#' to change it.\n"
           "format = " << kCurrentFormat << "\n\n";

    out << "[daemon]\n";
    line("log_level", "How much handlerd logs: \"trace\", \"debug\", \"info\", \"warn\" or \"error\".",
         quote(to_string(settings.daemon.log_level)), quote(to_string(defaults.daemon.log_level)),
         "daemon");

    out << "\n[api]\n";
    line("tcp", "Serve the API on TCP too (the web UI needs it); the unix socket is always on.",
         boolean(settings.api.tcp), boolean(defaults.api.tcp), "api");
    line("address", "TCP address: loopback only, 127.0.0.0/8 or ::1.",
         quote(settings.api.address), quote(defaults.api.address), "api");
    line("port", "TCP port, 0 to 65535; 0 picks a free port.", std::to_string(settings.api.port),
         std::to_string(defaults.api.port), "api");
    line("body_limit_bytes",
         "Largest request body in bytes (" + std::to_string(kMinBodyLimitBytes) + " to " +
             std::to_string(kMaxBodyLimitBytes) + ").",
         std::to_string(settings.api.body_limit_bytes),
         std::to_string(defaults.api.body_limit_bytes), "api");
    line("read_timeout_ms",
         "How long a request may take to arrive, in milliseconds (" +
             std::to_string(kMinReadTimeoutMs) + " to " + std::to_string(kMaxReadTimeoutMs) + ").",
         std::to_string(settings.api.read_timeout_ms),
         std::to_string(defaults.api.read_timeout_ms), "api");

    out << "\n[plugins]\n";
    line("disabled", "Ids of plugins that handlerd finds but does not load, e.g. [\"codex\"].",
         list(settings.plugins.disabled), list(defaults.plugins.disabled), "plugins");

    out << "\n[sessions]\n";
    line("image",
         "Image for sessions whose harness names none; by default the base image that "
         "`handler setup` builds (localhost/handler-base:<recipe hash>).",
         quote(settings.sessions.image.empty() ? "localhost/handler-base" : settings.sessions.image),
         quote("localhost/handler-base"), "sessions");
    line("log_limit_bytes",
         "Output kept per session on disk, in bytes (" + std::to_string(kMinLogLimitBytes) +
             " to " + std::to_string(kMaxLogLimitBytes) +
             "); past it the log is rotated and one older part kept.",
         std::to_string(settings.sessions.log_limit_bytes),
         std::to_string(defaults.sessions.log_limit_bytes), "sessions");
    line("headless_timeout_minutes",
         "A headless run (handler run -p) still going after this many minutes is stopped, since "
         "nobody watches it and harnesses retry an unreachable model without end; 0: never (up to " +
             std::to_string(kMaxHeadlessTimeoutMinutes) + ").",
         std::to_string(settings.sessions.headless_timeout_minutes),
         std::to_string(defaults.sessions.headless_timeout_minutes), "sessions");
    const auto sessions_line = [&](std::string_view key, const std::string& comment, std::uint64_t value,
                                   std::uint64_t default_value) {
        line(key, comment, std::to_string(value), std::to_string(default_value), "sessions");
    };
    sessions_line("tmp_size_mib",
                  "Size of each session's /tmp (a tmpfs, in memory), in MiB (" + std::to_string(kMinTmpfsSizeMib) +
                      " to " + std::to_string(kMaxTmpfsSizeMib) + ").",
                  settings.sessions.limits.tmp_size_mib, defaults.sessions.limits.tmp_size_mib);
    sessions_line("home_size_mib",
                  "Size of each session's HOME (a tmpfs, in memory), in MiB (" + std::to_string(kMinTmpfsSizeMib) +
                      " to " + std::to_string(kMaxTmpfsSizeMib) + ").",
                  settings.sessions.limits.home_size_mib, defaults.sessions.limits.home_size_mib);
    sessions_line("process_limit",
                  "Processes and threads a session may have at once (" + std::to_string(kMinProcessLimit) + " to " +
                      std::to_string(kMaxProcessLimit) + "), so that a fork bomb stays inside it.",
                  settings.sessions.limits.process_limit, defaults.sessions.limits.process_limit);
    sessions_line("memory_limit_mib",
                  "Memory a session may use, in MiB; where cgroups cannot limit it (cgroup v1), each of its "
                  "processes instead (`handler setup` says which); 0: none (up to " +
                      std::to_string(kMaxMemoryLimitMib) + ").",
                  settings.sessions.limits.memory_limit_mib, defaults.sessions.limits.memory_limit_mib);

    out << "\n[network]\n";
    line("proxy_port", "Port of the egress proxy inside each session (1024 to 65535).",
         std::to_string(settings.network.proxy_port), std::to_string(defaults.network.proxy_port),
         "network");
    out << "# Names resolved to fixed addresses, for test servers on this machine:\n"
           "# resolve = { \"api.example.test\" = \"127.0.0.1\", \"api.example.com:443\" = \"127.0.0.1:8443\" }\n";
    return out.str();
}

Result<Loaded> load(const fs::path& file, MissingFile missing) {
    Loaded loaded;
    std::error_code error;
    const bool exists = fs::exists(file, error);
    if (error)
        return make_error(ErrorCode::internal, "cannot inspect " + file.string() + ": " +
                                                   error.message() + "; check its permissions");
    if (!exists) {
        if (missing == MissingFile::leave_alone) return loaded;
        // A folder we create is private like the rest of ours; an existing one is the
        // user's to set up and is left as it is.
        auto folder = fs::exists(file.parent_path(), error)
                          ? Result<void>()
                          : ensure_private_dir(file.parent_path(), 0700);
        auto written = folder ? write_file_atomic(file, render(Settings{}, {}), 0600)
                              : Result<void>(folder.take_error());
        // Defaults work without the file, so failing to write it only costs a log line.
        if (written) {
            loaded.wrote_default = true;
            loaded.notes.push_back("wrote the default settings to " + file.string());
        } else {
            loaded.notes.push_back("using the default settings; could not write " +
                                   file.string() + ": " + written.error().message);
        }
        return loaded;
    }

    if (!fs::is_regular_file(file, error))
        return make_error(ErrorCode::invalid_argument,
                          file.string() + " is not a file; move it away and start again");
    auto text = read_file(file);
    if (!text)
        return make_error(ErrorCode::internal, text.error().message + "; check its permissions");
    auto parsed = parse(*text, file);
    if (!parsed) return parsed.take_error();
    loaded.settings = parsed->settings;
    loaded.file_format = parsed->format;
    if (parsed->format == kCurrentFormat) return loaded;

    // Older format: back up the original byte for byte, then replace it atomically, so
    // at every instant one complete file (old or new) is in place and the old one is kept.
    // A symbolic link (a dotfiles repository) is written through, not replaced.
    const fs::path target = fs::is_symlink(fs::symlink_status(file, error))
                                ? fs::canonical(file, error)
                                : file;
    if (error)
        return make_error(ErrorCode::internal,
                          "cannot resolve " + file.string() + ": " + error.message());
    const unsigned mode = static_cast<unsigned>(fs::status(file, error).permissions()) & 0777;
    auto backup = write_backup(file, parsed->format, *text, mode);
    if (!backup)
        return make_error(ErrorCode::internal,
                          backup.error().message + "; the file was left in format " +
                              std::to_string(parsed->format) + ". Fix the folder's permissions, "
                              "or convert it by hand (docs/configuration.md)");
    auto written = write_file_atomic(target, render(parsed->settings, parsed->explicit_keys), mode);
    if (!written)
        return make_error(ErrorCode::internal,
                          written.error().message + "; the original is unchanged and a copy is in " +
                              backup->string());
    loaded.backup = *backup;
    loaded.notes.push_back("converted " + file.string() + " from format " +
                           std::to_string(parsed->format) + " to format " +
                           std::to_string(kCurrentFormat) + "; the original is kept as " +
                           backup->string());
    return loaded;
}

} // namespace handler::settings
