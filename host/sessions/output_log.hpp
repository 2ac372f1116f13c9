// A session's output on disk: every byte the program wrote, in order, so `handler logs`
// shows all of it and a restarted handlerd knows exactly how much it has (the shim is
// then asked to resume from there). Bounded: past `limit` bytes the file is rotated to
// output.log.1 (one older generation is kept) so a runaway program cannot fill the disk.
//
//   <data>/sessions/<id>/output.log     newest bytes (append-only, 0600)
//   <data>/sessions/<id>/output.log.1   the generation before
//   <data>/sessions/<id>/output.base    output offset of output.log's first byte
//
// Offsets count every byte the session ever produced, across rotations. The file keeps
// the bytes as printed; what of them reaches a terminal is filtered on the way
// (terminal_filter.hpp).
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace handler::sessions {

class OutputLog {
public:
    // Creates `dir` (0700) when needed and opens the log for appending.
    static Result<OutputLog> open(const std::filesystem::path& dir, std::uint64_t limit);

    OutputLog(OutputLog&& other) noexcept;
    OutputLog& operator=(OutputLog&& other) noexcept;
    OutputLog(const OutputLog&) = delete;
    OutputLog& operator=(const OutputLog&) = delete;
    ~OutputLog();

    // The output offset just past the last byte written.
    std::uint64_t end() const { return base_ + size_; }
    // The offset of the oldest byte still on disk (output.log.1's first, if it exists).
    std::uint64_t oldest() const { return oldest_; }

    Result<void> append(std::string_view bytes);
    // `bytes` of output were lost (the shim's ring overflowed while handlerd was down):
    // moves end() past them, so the log's offsets stay those of the shim.
    Result<void> skip(std::uint64_t bytes);

    // Everything on disk, oldest first.
    Result<std::string> read_all() const;
    // The last `bytes` bytes (or fewer) of the current file, and the offset of the first.
    Result<std::pair<std::uint64_t, std::string>> tail(std::size_t bytes) const;

    const std::filesystem::path& dir() const { return dir_; }

private:
    OutputLog() = default;
    Result<void> rotate();

    std::filesystem::path dir_;
    std::uint64_t limit_ = 0;
    int fd_ = -1;
    std::uint64_t base_ = 0;
    std::uint64_t size_ = 0;
    std::uint64_t oldest_ = 0;
};

} // namespace handler::sessions
