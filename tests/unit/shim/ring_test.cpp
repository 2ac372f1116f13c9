// The shim's output ring: offsets survive dropping, and replay starts exactly where asked.
#include "ring.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>
#include <vector>

namespace handler::shim {
namespace {

struct Range {
    std::uint64_t offset;
    Stream stream;
    std::string bytes;
    bool operator==(const Range&) const = default;
};

std::vector<Range> replay(const OutputRing& ring, std::uint64_t from) {
    std::vector<Range> ranges;
    ring.for_each_from(from, [&](std::uint64_t offset, Stream stream, std::string_view bytes) {
        ranges.push_back({offset, stream, std::string(bytes)});
    });
    return ranges;
}

struct Append {
    Stream stream;
    std::string_view bytes;
};

OutputRing ring_with(std::size_t capacity, std::initializer_list<Append> appends) {
    OutputRing ring(capacity);
    for (const auto& [stream, bytes] : appends) ring.append(stream, bytes);
    return ring;
}

std::string joined(const std::vector<Range>& ranges) {
    std::string text;
    for (const auto& range : ranges) text += range.bytes;
    return text;
}

TEST(OutputRing, StartsEmpty) {
    OutputRing ring(16);
    EXPECT_EQ(ring.produced(), 0u);
    EXPECT_EQ(ring.oldest(), 0u);
    EXPECT_TRUE(replay(ring, 0).empty());
}

TEST(OutputRing, KeepsEverythingUnderCapacityAndMergesOneStream) {
    const auto ring = ring_with(
        100, {{Stream::terminal, "hello "}, {Stream::terminal, "world"}, {Stream::terminal, ""}});
    EXPECT_EQ(ring.produced(), 11u);
    EXPECT_EQ(ring.oldest(), 0u);
    EXPECT_EQ(ring.chunk_count(), 1u);
    EXPECT_EQ(replay(ring, 0), (std::vector<Range>{{0, Stream::terminal, "hello world"}}));
}

TEST(OutputRing, DropsOldestBytesWhenOverCapacity) {
    const auto ring = ring_with(10, {{Stream::stdout_, "0123456"}, {Stream::stderr_, "789ab"}});
    EXPECT_EQ(ring.produced(), 12u);
    EXPECT_EQ(ring.oldest(), 2u);
    EXPECT_EQ(ring.retained(), 10u);
    // The first chunk was trimmed in the middle; offsets and streams stay right.
    EXPECT_EQ(replay(ring, 0), (std::vector<Range>{{2, Stream::stdout_, "23456"},
                                                   {7, Stream::stderr_, "789ab"}}));
}

TEST(OutputRing, AnAppendLargerThanCapacityKeepsItsTail) {
    const auto ring = ring_with(4, {{Stream::stdout_, "ab"}, {Stream::stderr_, "0123456789"}});
    EXPECT_EQ(ring.produced(), 12u);
    EXPECT_EQ(ring.oldest(), 8u);
    EXPECT_EQ(replay(ring, 0), (std::vector<Range>{{8, Stream::stderr_, "6789"}}));
}

TEST(OutputRing, ResumeFromBeforeOldestStartsAtOldest) {
    const auto ring = ring_with(5, {{Stream::terminal, "abcdefgh"}});
    EXPECT_EQ(replay(ring, 1), (std::vector<Range>{{3, Stream::terminal, "defgh"}}));
}

TEST(OutputRing, ResumeFromTheMiddleOfAChunkTrimsIt) {
    const auto ring = ring_with(
        100, {{Stream::stdout_, "abc"}, {Stream::stderr_, "defg"}, {Stream::stdout_, "hi"}});
    EXPECT_EQ(replay(ring, 5), (std::vector<Range>{{5, Stream::stderr_, "fg"},
                                                   {7, Stream::stdout_, "hi"}}));
    // Exactly at a chunk boundary: no empty range for the chunk before.
    EXPECT_EQ(replay(ring, 3), (std::vector<Range>{{3, Stream::stderr_, "defg"},
                                                   {7, Stream::stdout_, "hi"}}));
    EXPECT_EQ(replay(ring, 8), (std::vector<Range>{{8, Stream::stdout_, "i"}}));
}

TEST(OutputRing, ResumeAtOrPastProducedYieldsNothing) {
    const auto ring = ring_with(100, {{Stream::terminal, "abc"}});
    EXPECT_TRUE(replay(ring, 3).empty());
    EXPECT_TRUE(replay(ring, 1000).empty());
}

TEST(OutputRing, ManySmallAppendsReplayInOrderWithoutGaps) {
    OutputRing ring(1000);
    std::string all;
    for (int i = 0; i < 500; ++i) {
        const std::string piece = std::to_string(i) + ",";
        ring.append(i % 3 == 0 ? Stream::stderr_ : Stream::stdout_, piece);
        all += piece;
    }
    const auto ranges = replay(ring, 0);
    ASSERT_FALSE(ranges.empty());
    EXPECT_EQ(ranges.front().offset, ring.oldest());
    std::uint64_t next = ring.oldest();
    for (const auto& range : ranges) {
        EXPECT_EQ(range.offset, next);
        next += range.bytes.size();
    }
    EXPECT_EQ(next, ring.produced());
    EXPECT_EQ(joined(ranges), all.substr(all.size() - 1000));
}

TEST(OutputRing, ChunkCountIsBoundedEvenWhenStreamsAlternate) {
    OutputRing ring(1024 * 1024);
    const std::size_t appends = OutputRing::kMaxChunks + 100;
    for (std::size_t i = 0; i < appends; ++i)
        ring.append(i % 2 == 0 ? Stream::stdout_ : Stream::stderr_, "x");
    EXPECT_EQ(ring.chunk_count(), OutputRing::kMaxChunks);
    EXPECT_EQ(ring.produced(), appends);
    EXPECT_EQ(ring.oldest(), 100u);
    EXPECT_EQ(replay(ring, 0).front().offset, 100u);
}

} // namespace
} // namespace handler::shim
