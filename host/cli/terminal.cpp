#include "cli/terminal.hpp"

#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>

namespace handler::cli {

RawMode::RawMode(int fd) : fd_(fd) {
    termios original{};
    if (fd_ < 0 || ::isatty(fd_) == 0 || ::tcgetattr(fd_, &original) != 0) return;
    saved_.resize(sizeof original);
    std::memcpy(saved_.data(), &original, sizeof original);
    termios raw = original;
    ::cfmakeraw(&raw);
    if (::tcsetattr(fd_, TCSANOW, &raw) == 0) active_ = true;
}

RawMode::~RawMode() {
    if (!active_) return;
    termios original{};
    std::memcpy(&original, saved_.data(), sizeof original);
    ::tcsetattr(fd_, TCSANOW, &original);
}

Result<std::string> read_secret(int fd, std::ostream& prompt) {
    if (fd < 0) return make_error(ErrorCode::invalid_argument, "no input to read the key from");
    const bool terminal = ::isatty(fd) != 0;
    termios original{};
    const bool quiet = terminal && ::tcgetattr(fd, &original) == 0;
    if (quiet) {
        termios silent = original;
        silent.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        ::tcsetattr(fd, TCSANOW, &silent);
        prompt << "Paste the key, then press Enter: " << std::flush;
    }
    std::string value;
    char buffer[4096];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        value.append(buffer, static_cast<std::size_t>(got));
        if (value.size() > 64 * 1024) break;
        if (terminal && value.find('\n') != std::string::npos) break;
    }
    if (quiet) {
        ::tcsetattr(fd, TCSANOW, &original);
        prompt << '\n';
    }
    if (value.size() > 64 * 1024) return make_error(ErrorCode::too_large, "more than 64 KiB on stdin; that is not a key");
    return value;
}

std::optional<std::pair<std::uint16_t, std::uint16_t>> window_size(int fd) {
    winsize size{};
    if (fd < 0 || ::ioctl(fd, TIOCGWINSZ, &size) != 0 || size.ws_row == 0 || size.ws_col == 0)
        return std::nullopt;
    return std::make_pair(static_cast<std::uint16_t>(size.ws_row),
                          static_cast<std::uint16_t>(size.ws_col));
}

Result<DetachKeys> DetachKeys::parse(std::string_view text) {
    DetachKeys keys;
    keys.text_ = std::string(text);
    while (!text.empty()) {
        const auto comma = text.find(',');
        const std::string_view key = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        if (key.size() == 1) {
            keys.sequence_.push_back(key.front());
            continue;
        }
        if (key.size() == 6 && key.substr(0, 5) == "ctrl-") {
            const char c = key[5];
            if (c >= 'a' && c <= 'z') {
                keys.sequence_.push_back(static_cast<char>(c - 'a' + 1));
                continue;
            }
            if (c == '@' || (c >= '[' && c <= '_')) {
                keys.sequence_.push_back(static_cast<char>(c - '@'));
                continue;
            }
        }
        return make_error(ErrorCode::invalid_argument,
                          "detach key '" + std::string(key) +
                              "' is not a single character or ctrl-a..ctrl-z, ctrl-@, ctrl-[, "
                              "ctrl-\\, ctrl-], ctrl-^, ctrl-_ (e.g. --detach-keys ctrl-p,ctrl-q)");
    }
    return keys;
}

bool DetachKeys::filter(std::string& bytes) {
    if (sequence_.empty()) return true;
    std::string out;
    for (const char c : bytes) {
        if (c == sequence_[matched_]) {
            if (++matched_ == sequence_.size()) {
                matched_ = 0;
                bytes = std::move(out);
                return false;
            }
            continue;
        }
        // The held-back start was not the sequence after all: it belongs to the program.
        out.append(sequence_, 0, matched_);
        matched_ = 0;
        if (c == sequence_[0]) {
            matched_ = 1;
            if (sequence_.size() == 1) {
                bytes = std::move(out);
                return false;
            }
            continue;
        }
        out.push_back(c);
    }
    bytes = std::move(out);
    return true;
}

} // namespace handler::cli
