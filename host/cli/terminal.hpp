// The CLI's side of a session's terminal: the local terminal in raw mode while attached
// (restored on every way out), its size, and the detach key sequence, which is matched
// in the input before anything is sent, so it never reaches the session.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::cli {

// Raw mode on `fd` for the object's lifetime (nothing when fd is not a terminal).
class RawMode {
public:
    explicit RawMode(int fd);
    ~RawMode();
    RawMode(const RawMode&) = delete;
    RawMode& operator=(const RawMode&) = delete;

private:
    int fd_;
    bool active_ = false;
    std::vector<unsigned char> saved_; // struct termios, kept opaque here
};

// Reads a key from `fd` until end of input or, on a terminal, the end of the line, with
// echo off there (the prompt goes to `prompt`). Never more than 64 KiB.
Result<std::string> read_secret(int fd, std::ostream& prompt);

// rows, cols of the terminal on `fd`; nullopt when it is none.
std::optional<std::pair<std::uint16_t, std::uint16_t>> window_size(int fd);

// A detach sequence such as "ctrl-p,ctrl-q" (podman's and docker's default). Bytes that
// start the sequence are held back until it is complete or broken; a broken start is
// sent on, so ctrl-p alone still reaches the program.
class DetachKeys {
public:
    // "ctrl-a".."ctrl-z", "ctrl-@", "ctrl-[", "ctrl-\\", "ctrl-]", "ctrl-^", "ctrl-_" and
    // single characters, separated by commas. Empty: no detach key.
    static Result<DetachKeys> parse(std::string_view text);

    // Rewrites `bytes` to what should be sent; false when the sequence is complete (the
    // caller sends what is left and detaches).
    bool filter(std::string& bytes);

    std::string describe() const { return text_; }

private:
    std::string sequence_;
    std::string text_;
    std::size_t matched_ = 0;
};

} // namespace handler::cli
