#include "ring.hpp"

#include <algorithm>

namespace handler::shim {

void OutputRing::append(Stream stream, std::string_view bytes) {
    if (bytes.empty()) return;
    produced_ += bytes.size();
    // Only the tail that fits can ever be retained; skip copying the rest.
    if (bytes.size() >= capacity_) {
        drop_front(retained_);
        bytes.remove_prefix(bytes.size() - capacity_);
    }
    // Retained bytes are always the contiguous range [oldest, produced), so the last
    // chunk ends exactly where these bytes start.
    if (!chunks_.empty() && chunks_.back().stream == stream &&
        chunks_.back().bytes.size() < kChunkBytes) {
        chunks_.back().bytes.append(bytes);
    } else {
        chunks_.push_back(Chunk{produced_ - bytes.size(), stream, std::string(bytes)});
    }
    retained_ += bytes.size();

    if (retained_ > capacity_) drop_front(retained_ - capacity_);
    while (chunks_.size() > kMaxChunks) drop_front(chunks_.front().bytes.size());
}

void OutputRing::drop_front(std::size_t bytes) {
    while (bytes > 0 && !chunks_.empty()) {
        Chunk& front = chunks_.front();
        if (front.bytes.size() <= bytes) {
            bytes -= front.bytes.size();
            retained_ -= front.bytes.size();
            chunks_.pop_front();
        } else {
            front.bytes.erase(0, bytes);
            front.offset += bytes;
            retained_ -= bytes;
            bytes = 0;
        }
    }
}

std::size_t OutputRing::first_chunk_at(std::uint64_t from) const {
    // The chunk holding `from` is the last one starting at or before it.
    const auto after = std::upper_bound(
        chunks_.begin(), chunks_.end(), from,
        [](std::uint64_t value, const Chunk& chunk) { return value < chunk.offset; });
    if (after == chunks_.begin()) return 0;
    return static_cast<std::size_t>(after - chunks_.begin()) - 1;
}

} // namespace handler::shim
