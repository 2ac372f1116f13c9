// The wire protocol between handlerd and handler-shim, the small static program that is
// the first process of every session container (under podman's --init). The shim owns
// the session's terminal (or pipes), keeps the recent output in a ring, and *connects out*
// to a unix socket that handlerd listens on in a per-session folder mounted read-only into
// the container. That direction is deliberate:
//   - the container can neither create nor replace anything handlerd connects to, so an
//     agent cannot point handlerd at another socket with a symlink;
//   - the socket is per session, so whoever speaks on it can only ever speak about its
//     own session (an agent can impersonate its own shim, which gains it nothing: the
//     terminal stream is already the agent's to write);
//   - when handlerd restarts, the shim simply reconnects, says how much output it has
//     produced, and handlerd asks for what its log is missing (RESUME).
//
// Framing: [u8 type][u32 big-endian payload length][payload]. Integers in payloads are
// big-endian. A payload over kMaxPayload is a protocol error: the receiver drops the
// connection (handlerd treats the shim as untrusted input, like any API client).
//
// Header-only and free of everything but the standard library, because the shim is linked
// statically and handlerd includes it too: one definition for both ends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::shim {

// 2 added WHO/OWNER (who opened a connection to the proxy). handlerd speaks both: it
// asks a version-1 shim nothing, since that shim drops a connection on a type it does
// not know.
inline constexpr std::uint32_t kProtocolVersion = 2;
inline constexpr std::uint32_t kOldestProtocolVersion = 1;
inline constexpr std::size_t kHeaderSize = 5;
inline constexpr std::size_t kMaxPayload = 64 * 1024;

// Zero is never a valid type (STYLE.md): a zero-filled frame reads as a mistake.
enum class FrameType : std::uint8_t {
    // shim → handlerd
    hello = 1,  // u32 version, u64 produced, u64 oldest, u8 exited, i32 exit_code, u8 tty
    output = 2, // u64 offset of the first byte, u8 stream (Stream), bytes
    exit = 3,   // i32 exit code: the program's status, or 128 + signal number
    owner = 4,  // (2) u32 query, u8 OwnerStatus, u8 count, count × process (OwnerAnswer)

    // handlerd → shim
    resume = 10,    // u64 from: send retained output from max(from, oldest), then live
    input = 11,     // bytes for the terminal, or the program's stdin
    input_eof = 12, // close the program's stdin (pipe mode; ignored with a terminal)
    resize = 13,    // u16 rows, u16 cols
    signal = 14,    // i32 signal number, sent to the program's process group
    redraw = 15,    // SIGWINCH to the terminal's foreground process group (TUIs repaint)
    exit_ack = 16,  // handlerd has recorded the exit; the shim may end
    who = 17,       // (2) u32 query, u16 port: which process holds the TCP connection
                    // from 127.0.0.1:port (or [::1]:port) to the proxy port? OWNER answers
};

enum class Stream : std::uint8_t { terminal = 1, stdout_ = 2, stderr_ = 3 };

struct Frame {
    FrameType type = FrameType::hello;
    std::string payload;
};

struct Hello {
    std::uint32_t version = kProtocolVersion;
    std::uint64_t produced = 0; // bytes of output so far: the offset of the next byte
    std::uint64_t oldest = 0;   // offset of the oldest byte still held in the ring
    bool exited = false;
    std::int32_t exit_code = 0; // meaningful when exited
    bool tty = false;
};

struct Output {
    std::uint64_t offset = 0;
    Stream stream = Stream::terminal;
    std::string_view data; // points into the frame's payload
};

// What OWNER says of a WHO. The shim reads the container's /proc (shim/src/owner.hpp);
// everything in the answer is the container's to say, so handlerd only displays it and
// never decides anything by it.
enum class OwnerStatus : std::uint8_t {
    found = 1,        // processes[0] holds the socket; then its parents, nearest first
    no_connection = 2, // no such connection is open any more
    no_process = 3,   // the connection is open but no process in view holds it (it exited,
                      // or passed the socket on and closed its own copy)
    unreadable = 4,   // the shim could not read /proc
};

// The bounds of an answer: a command line is cut at kMaxCommandBytes and the chain of
// parents at kMaxChain processes (the holder included), so an OWNER fits in one frame.
inline constexpr std::size_t kMaxCommandBytes = 2048;
inline constexpr std::size_t kMaxChain = 17;

struct OwnerProcess {
    std::uint32_t pid = 0;
    std::string command; // /proc/PID/cmdline as it is: arguments separated by NUL bytes
    bool truncated = false;
};

struct OwnerAnswer {
    std::uint32_t query = 0;
    OwnerStatus status = OwnerStatus::unreadable;
    std::vector<OwnerProcess> processes;
};

struct Who {
    std::uint32_t query = 0;
    std::uint16_t port = 0;
};

namespace detail {

inline void put_u8(std::string& out, std::uint8_t value) {
    out.push_back(static_cast<char>(value));
}
inline void put_u16(std::string& out, std::uint16_t value) {
    put_u8(out, static_cast<std::uint8_t>(value >> 8));
    put_u8(out, static_cast<std::uint8_t>(value));
}
inline void put_u32(std::string& out, std::uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) put_u8(out, static_cast<std::uint8_t>(value >> shift));
}
inline void put_u64(std::string& out, std::uint64_t value) {
    for (int shift = 56; shift >= 0; shift -= 8) put_u8(out, static_cast<std::uint8_t>(value >> shift));
}

// Reads big-endian integers from a payload; any read past the end makes ok() false.
class Reader {
public:
    explicit Reader(std::string_view data) : data_(data) {}
    std::uint64_t take(std::size_t bytes) {
        if (data_.size() - position_ < bytes || !ok_) {
            ok_ = false;
            return 0;
        }
        std::uint64_t value = 0;
        for (std::size_t i = 0; i < bytes; ++i)
            value = (value << 8) | static_cast<unsigned char>(data_[position_ + i]);
        position_ += bytes;
        return value;
    }
    std::string_view rest() const { return ok_ ? data_.substr(position_) : std::string_view(); }
    void take_bytes(std::size_t bytes) {
        if (!ok_ || data_.size() - position_ < bytes) ok_ = false;
        else position_ += bytes;
    }
    bool ok() const { return ok_; }
    bool at_end() const { return ok_ && position_ == data_.size(); }

private:
    std::string_view data_;
    std::size_t position_ = 0;
    bool ok_ = true;
};

} // namespace detail

// Appends one frame to `out`. `payload` must not exceed kMaxPayload (callers split).
inline void append_frame(std::string& out, FrameType type, std::string_view payload) {
    detail::put_u8(out, static_cast<std::uint8_t>(type));
    detail::put_u32(out, static_cast<std::uint32_t>(payload.size()));
    out.append(payload);
}

inline std::string encode_hello(const Hello& hello) {
    std::string payload;
    detail::put_u32(payload, hello.version);
    detail::put_u64(payload, hello.produced);
    detail::put_u64(payload, hello.oldest);
    detail::put_u8(payload, hello.exited ? 1 : 0);
    detail::put_u32(payload, static_cast<std::uint32_t>(hello.exit_code));
    detail::put_u8(payload, hello.tty ? 1 : 0);
    std::string frame;
    append_frame(frame, FrameType::hello, payload);
    return frame;
}

// Appends output frames for `data` starting at `offset`, split at kMaxPayload.
inline void append_output(std::string& out, std::uint64_t offset, Stream stream,
                          std::string_view data) {
    constexpr std::size_t kChunk = kMaxPayload - 9;
    do {
        const auto piece = data.substr(0, kChunk);
        std::string payload;
        payload.reserve(9 + piece.size());
        detail::put_u64(payload, offset);
        detail::put_u8(payload, static_cast<std::uint8_t>(stream));
        payload.append(piece);
        append_frame(out, FrameType::output, payload);
        offset += piece.size();
        data.remove_prefix(piece.size());
    } while (!data.empty());
}

inline std::string encode_i32(FrameType type, std::int32_t value) {
    std::string payload;
    detail::put_u32(payload, static_cast<std::uint32_t>(value));
    std::string frame;
    append_frame(frame, type, payload);
    return frame;
}

inline std::string encode_resume(std::uint64_t from) {
    std::string payload;
    detail::put_u64(payload, from);
    std::string frame;
    append_frame(frame, FrameType::resume, payload);
    return frame;
}

inline std::string encode_resize(std::uint16_t rows, std::uint16_t cols) {
    std::string payload;
    detail::put_u16(payload, rows);
    detail::put_u16(payload, cols);
    std::string frame;
    append_frame(frame, FrameType::resize, payload);
    return frame;
}

inline std::string encode_empty(FrameType type) {
    std::string frame;
    append_frame(frame, type, {});
    return frame;
}

inline std::string encode_who(const Who& who) {
    std::string payload;
    detail::put_u32(payload, who.query);
    detail::put_u16(payload, who.port);
    std::string frame;
    append_frame(frame, FrameType::who, payload);
    return frame;
}

// Cuts what exceeds the bounds above, so any answer encodes into one frame.
inline std::string encode_owner(const OwnerAnswer& answer) {
    std::string payload;
    detail::put_u32(payload, answer.query);
    detail::put_u8(payload, static_cast<std::uint8_t>(answer.status));
    const std::size_t count = std::min(answer.processes.size(), kMaxChain);
    detail::put_u8(payload, static_cast<std::uint8_t>(count));
    for (std::size_t i = 0; i < count; ++i) {
        const auto& process = answer.processes[i];
        const std::string_view command = std::string_view(process.command).substr(0, kMaxCommandBytes);
        detail::put_u32(payload, process.pid);
        detail::put_u8(payload, process.truncated || command.size() < process.command.size() ? 1 : 0);
        detail::put_u16(payload, static_cast<std::uint16_t>(command.size()));
        payload.append(command);
    }
    std::string frame;
    append_frame(frame, FrameType::owner, payload);
    return frame;
}

// Decoders return nullopt for a payload of the wrong shape.
inline std::optional<Hello> decode_hello(std::string_view payload) {
    detail::Reader reader(payload);
    Hello hello;
    hello.version = static_cast<std::uint32_t>(reader.take(4));
    hello.produced = reader.take(8);
    hello.oldest = reader.take(8);
    const auto exited = reader.take(1);
    hello.exit_code = static_cast<std::int32_t>(static_cast<std::uint32_t>(reader.take(4)));
    const auto tty = reader.take(1);
    if (!reader.at_end() || exited > 1 || tty > 1 || hello.oldest > hello.produced)
        return std::nullopt;
    hello.exited = exited == 1;
    hello.tty = tty == 1;
    return hello;
}

inline std::optional<Output> decode_output(std::string_view payload) {
    detail::Reader reader(payload);
    Output output;
    output.offset = reader.take(8);
    const auto stream = reader.take(1);
    if (!reader.ok() || stream < 1 || stream > 3) return std::nullopt;
    output.stream = static_cast<Stream>(stream);
    output.data = reader.rest();
    return output;
}

inline std::optional<std::int32_t> decode_i32(std::string_view payload) {
    detail::Reader reader(payload);
    const auto value = static_cast<std::int32_t>(static_cast<std::uint32_t>(reader.take(4)));
    if (!reader.at_end()) return std::nullopt;
    return value;
}

inline std::optional<std::uint64_t> decode_u64(std::string_view payload) {
    detail::Reader reader(payload);
    const auto value = reader.take(8);
    if (!reader.at_end()) return std::nullopt;
    return value;
}

inline std::optional<Who> decode_who(std::string_view payload) {
    detail::Reader reader(payload);
    Who who;
    who.query = static_cast<std::uint32_t>(reader.take(4));
    who.port = static_cast<std::uint16_t>(reader.take(2));
    if (!reader.at_end() || who.port == 0) return std::nullopt;
    return who;
}

// Refuses anything past the bounds, an unknown status, a pid of 0, processes with a
// status other than found, and bytes left over.
inline std::optional<OwnerAnswer> decode_owner(std::string_view payload) {
    detail::Reader reader(payload);
    OwnerAnswer answer;
    answer.query = static_cast<std::uint32_t>(reader.take(4));
    const auto status = reader.take(1);
    const auto count = reader.take(1);
    if (!reader.ok() || status < 1 || status > 4 || count > kMaxChain) return std::nullopt;
    answer.status = static_cast<OwnerStatus>(status);
    if ((answer.status == OwnerStatus::found) != (count > 0)) return std::nullopt;
    for (std::uint64_t i = 0; i < count; ++i) {
        OwnerProcess process;
        process.pid = static_cast<std::uint32_t>(reader.take(4));
        const auto truncated = reader.take(1);
        const auto length = reader.take(2);
        if (!reader.ok() || process.pid == 0 || truncated > 1 || length > kMaxCommandBytes ||
            reader.rest().size() < length)
            return std::nullopt;
        process.truncated = truncated == 1;
        process.command = std::string(reader.rest().substr(0, length));
        reader.take_bytes(length);
        answer.processes.push_back(std::move(process));
    }
    if (!reader.at_end()) return std::nullopt;
    return answer;
}

struct Size {
    std::uint16_t rows = 0;
    std::uint16_t cols = 0;
};
inline std::optional<Size> decode_resize(std::string_view payload) {
    detail::Reader reader(payload);
    Size size;
    size.rows = static_cast<std::uint16_t>(reader.take(2));
    size.cols = static_cast<std::uint16_t>(reader.take(2));
    if (!reader.at_end() || size.rows == 0 || size.cols == 0) return std::nullopt;
    return size;
}

// Splits a byte stream into frames. feed() whatever arrived, then next() until it
// returns nullopt; failed() turns true (for good) on a frame over kMaxPayload or of an
// unknown type, after which the connection must be dropped.
class FrameDecoder {
public:
    void feed(std::string_view bytes) { buffer_.append(bytes); }

    std::optional<Frame> next() {
        if (failed_ || buffer_.size() - consumed_ < kHeaderSize) return compact(), std::nullopt;
        const auto* header = reinterpret_cast<const unsigned char*>(buffer_.data() + consumed_);
        const auto type = header[0];
        const std::size_t length = (std::size_t{header[1]} << 24) | (std::size_t{header[2]} << 16) |
                                   (std::size_t{header[3]} << 8) | std::size_t{header[4]};
        if (length > kMaxPayload || !known_type(type)) {
            failed_ = true;
            buffer_.clear();
            consumed_ = 0;
            return std::nullopt;
        }
        if (buffer_.size() - consumed_ < kHeaderSize + length) return compact(), std::nullopt;
        Frame frame{static_cast<FrameType>(type),
                    buffer_.substr(consumed_ + kHeaderSize, length)};
        consumed_ += kHeaderSize + length;
        return frame;
    }

    bool failed() const { return failed_; }
    std::size_t buffered() const { return buffer_.size() - consumed_; }

    static bool known_type(std::uint8_t type) {
        return (type >= 1 && type <= 4) || (type >= 10 && type <= 17);
    }

private:
    void compact() {
        if (consumed_ == 0) return;
        buffer_.erase(0, consumed_);
        consumed_ = 0;
    }

    std::string buffer_;
    std::size_t consumed_ = 0;
    bool failed_ = false;
};

} // namespace handler::shim
