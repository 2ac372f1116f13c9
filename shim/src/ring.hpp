// The recent output of the program, by offset since it started: what a reconnecting
// handlerd can ask for again (RESUME). Bytes are kept in chunks tagged with the stream
// they came from, so pipe mode can still tell stdout from stderr on replay.
#pragma once

#include <handler/shim_protocol.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

namespace handler::shim {

class OutputRing {
public:
    // Appends to the last chunk while it is from the same stream and below this size, so
    // many small reads do not cost a chunk each.
    static constexpr std::size_t kChunkBytes = 64 * 1024;
    // A program that alternates streams byte by byte would otherwise make a chunk (and
    // its bookkeeping) per byte; past this many chunks the oldest are dropped too.
    static constexpr std::size_t kMaxChunks = 64 * 1024;

    explicit OutputRing(std::size_t capacity_bytes) : capacity_(capacity_bytes) {}

    // Records `bytes` as the next output, dropping the oldest retained bytes when over
    // capacity. Empty appends are ignored.
    void append(Stream stream, std::string_view bytes);

    std::uint64_t produced() const { return produced_; }
    std::uint64_t oldest() const { return produced_ - retained_; }
    std::size_t retained() const { return retained_; }
    std::size_t chunk_count() const { return chunks_.size(); }

    // Calls visit(offset, stream, bytes) for every retained range at or after
    // max(from, oldest()), in order; the first range is trimmed to start there. Nothing
    // is visited when from >= produced().
    template <typename Visit>
    void for_each_from(std::uint64_t from, Visit&& visit) const {
        if (from >= produced_) return; // also keeps the trim below within the chunk
        for (auto index = first_chunk_at(from); index < chunks_.size(); ++index) {
            const Chunk& chunk = chunks_[index];
            std::string_view bytes = chunk.bytes;
            std::uint64_t offset = chunk.offset;
            if (from > offset) {
                bytes.remove_prefix(static_cast<std::size_t>(from - offset));
                offset = from;
            }
            if (!bytes.empty()) visit(offset, chunk.stream, bytes);
        }
    }

private:
    struct Chunk {
        std::uint64_t offset = 0;
        Stream stream = Stream::terminal;
        std::string bytes;
    };

    std::size_t first_chunk_at(std::uint64_t from) const;
    void drop_front(std::size_t bytes);

    std::size_t capacity_;
    std::uint64_t produced_ = 0;
    std::size_t retained_ = 0;
    std::deque<Chunk> chunks_;
};

} // namespace handler::shim
