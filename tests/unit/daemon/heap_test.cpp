// When handlerd gives glibc's free heap back (TrimPolicy, HeapKeeper with a fake heap),
// and that glibc's heap really does give freed pages back (the system heap, on this
// process's own memory).
#include "daemon/heap.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace handler::daemon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMiB = 1024 * 1024;

// A heap of 6 MiB in use, `free_mib` free in glibc's arenas, and `slack_mib` resident
// beyond what is in use.
HeapStats heap(std::size_t free_mib = 8, std::size_t slack_mib = 1) {
    return HeapStats{6 * kMiB, free_mib * kMiB, (6 + slack_mib) * kMiB};
}

using Why = TrimPolicy::Why;

TEST(TrimPolicy, ConnectionsThatStayFewNeverTrim) {
    TrimPolicy policy;
    const auto t0 = Clock::time_point{} + 1h;
    EXPECT_EQ(policy.observe(10, 2, heap(), t0), Why::none);
    EXPECT_EQ(policy.observe(40, 0, heap(), t0 + 2s), Why::none) << "a fall of 40 is under the 64 that count";
    EXPECT_EQ(policy.observe(63, 0, heap(), t0 + 4s), Why::none);
}

TEST(TrimPolicy, AFallFromAPeakTrimsOnceWhenThereIsFreeHeap) {
    TrimPolicy policy;
    const auto t0 = Clock::time_point{} + 1h;
    EXPECT_EQ(policy.observe(300, 280, heap(), t0), Why::none) << "still near the peak";
    EXPECT_EQ(policy.observe(280, 151, heap(), t0 + 2s), Why::none) << "151 of 300 is more than half";
    EXPECT_EQ(policy.observe(151, 20, heap(), t0 + 4s), Why::connections_fell)
        << "the peak of 300 is remembered across checks";
    EXPECT_EQ(policy.peak(), 20u) << "the count starts again from what is open";
    EXPECT_EQ(policy.observe(20, 20, heap(), t0 + 16s), Why::none) << "nothing fell since";
}

TEST(TrimPolicy, AtMostOneTrimPerIntervalAndAFallInItWaitsForItsEnd) {
    TrimPolicy policy;
    const auto t0 = Clock::time_point{} + 1h;
    ASSERT_EQ(policy.observe(500, 0, heap(), t0), Why::connections_fell);
    // A container that bursts again at once does not get a second walk of the heap yet...
    EXPECT_EQ(policy.observe(500, 0, heap(), t0 + 2s), Why::none);
    EXPECT_EQ(policy.observe(0, 0, heap(8, 40), t0 + 8s), Why::none) << "not even for slack";
    // ...but its peak is kept, and the check after the interval gives that memory back.
    EXPECT_EQ(policy.observe(0, 0, heap(), t0 + 10s), Why::connections_fell);
}

TEST(TrimPolicy, TooLittleFreeHeapForgetsThePeak) {
    TrimPolicy policy;
    const auto t0 = Clock::time_point{} + 1h;
    const HeapStats little{6 * kMiB, kMiB - 1, 7 * kMiB};
    EXPECT_EQ(policy.observe(200, 0, little, t0), Why::none);
    EXPECT_EQ(policy.peak(), 0u) << "the same fall is not weighed again";
    EXPECT_EQ(policy.observe(100, 10, heap(1), t0 + 4s), Why::connections_fell) << "a new peak is";
}

// What the connections cannot show: requests piled up on kept-alive connections, whose
// buffers grew and were freed while the number of connections stayed the same.
TEST(TrimPolicy, ResidentMemoryNotInUseThatGrowsBy2MiBTrimsWithoutAFallOfConnections) {
    TrimPolicy policy;
    const auto t0 = Clock::time_point{} + 1h;
    EXPECT_EQ(policy.observe(24, 24, heap(8, 1), t0), Why::none) << "the first check sets the baseline: 1 MiB";
    EXPECT_EQ(policy.observe(24, 24, HeapStats{9 * kMiB, 2 * kMiB, 11 * kMiB}, t0 + 2s), Why::none)
        << "memory in use grew, which no trim gives back (slack 2 MiB, 1 above the baseline)";
    EXPECT_EQ(policy.observe(24, 24, heap(8, 3), t0 + 4s), Why::slack_grew) << "3 MiB resident not in use";
    // The trim gave back only half: what stays is the new baseline, and the same slack
    // does not bring the walk of the heap again.
    policy.trimmed(heap(8, 2));
    EXPECT_EQ(policy.observe(24, 24, heap(8, 3), t0 + 20s), Why::none);
    EXPECT_EQ(policy.observe(24, 24, heap(8, 4), t0 + 22s), Why::slack_grew);
}

TEST(TrimPolicy, ItsOptionsSetTheFallTheFloorAndTheSlack) {
    TrimPolicy::Options options;
    options.min_drop = 4;
    options.fall_divisor = 4;
    options.min_free_bytes = 0;
    options.min_slack_growth_bytes = 512 * 1024;
    options.min_interval = 0ms;
    TrimPolicy policy(options);
    const auto t0 = Clock::time_point{} + 1h;
    EXPECT_EQ(policy.observe(8, 3, heap(0, 1), t0), Why::none) << "3 of 8 is more than a quarter";
    EXPECT_EQ(policy.observe(8, 2, heap(0, 1), t0), Why::connections_fell);
    EXPECT_EQ(policy.observe(6, 1, heap(0, 1), t0), Why::connections_fell);
    EXPECT_EQ(policy.observe(1, 1, HeapStats{6 * kMiB, 0, 6 * kMiB + 1536 * 1024}, t0), Why::slack_grew);
}

class FakeHeap final : public Heap {
public:
    HeapStats stats() const override { return current; }
    void trim() override {
        ++trims;
        current.free = current.free / 8;
        current.resident_anon -= 4 * kMiB;
    }
    HeapStats current{12 * kMiB, 6 * kMiB, 20 * kMiB};
    int trims = 0;
};

TEST(HeapKeeper, TrimsTheHeapWhenTheProxiesConnectionsFallBackOrItsSlackGrows) {
    boost::asio::io_context io;
    FakeHeap heap;
    HeapKeeper::Connections connections;
    HeapKeeper keeper(io, heap, [&] { return connections; });
    const auto t0 = Clock::time_point{} + 1h;
    connections = {400, 380};
    EXPECT_FALSE(keeper.check(t0));
    connections = {380, 12};
    EXPECT_TRUE(keeper.check(t0 + 2s));
    EXPECT_EQ(heap.trims, 1);
    EXPECT_EQ(heap.current.resident_anon, 16 * kMiB);
    connections = {12, 12};
    EXPECT_FALSE(keeper.check(t0 + 20s)) << "nothing fell, and the slack is what the trim left";
    heap.current.resident_anon += 2 * kMiB; // freed, and kept by glibc
    EXPECT_TRUE(keeper.check(t0 + 22s));
    EXPECT_EQ(heap.trims, 2);
}

// The real thing: freed pages between blocks still in use stay resident until trim()
// (this is what handlerd's heap looked like after a burst of connections), and trim()
// gives them back. On this process's own heap, so not under AddressSanitizer, whose
// allocator is not glibc's.
#if defined(__SANITIZE_ADDRESS__)
#define HANDLER_NOT_GLIBC_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HANDLER_NOT_GLIBC_MALLOC 1
#endif
#endif

TEST(SystemHeap, FreedPagesBetweenLiveBlocksGoBackOnlyWhenTrimmed) {
#ifdef HANDLER_NOT_GLIBC_MALLOC
    GTEST_SKIP() << "the sanitizer's allocator is not glibc's";
#else
    const auto heap = make_system_heap();
    // 64 MiB in 16 KiB blocks (under the mmap threshold: from the heap, like a
    // connection's buffers), each page written, then all freed but one block in 64: the
    // pins keep glibc from folding the free space into the top it trims by itself.
    constexpr std::size_t kBlock = 16 * 1024;
    constexpr std::size_t kBlocks = 64 * kMiB / kBlock;
    std::vector<std::unique_ptr<char[]>> blocks(kBlocks);
    for (auto& block : blocks) {
        block.reset(new char[kBlock]);
        for (std::size_t at = 0; at < kBlock; at += 4096) block[at] = 1;
    }
    const HeapStats allocated = heap->stats();
    EXPECT_GE(allocated.in_use, 64 * kMiB);
    for (std::size_t i = 0; i < kBlocks; ++i)
        if (i % 64 != 0) blocks[i].reset();
    const HeapStats freed = heap->stats();
    EXPECT_GE(freed.free, 60 * kMiB) << "glibc keeps what was freed";
    EXPECT_GE(freed.resident_anon + 8 * kMiB, allocated.resident_anon) << "and it stays resident";
    heap->trim();
    const HeapStats trimmed = heap->stats();
    EXPECT_LE(trimmed.resident_anon + 48 * kMiB, freed.resident_anon)
        << "trim gave back the pages: resident " << freed.resident_anon / kMiB << " -> "
        << trimmed.resident_anon / kMiB << " MiB";
#endif
}

} // namespace
} // namespace handler::daemon
