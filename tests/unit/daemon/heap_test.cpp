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

// A free-bytes source that counts how often it is asked (it walks the heap for real).
struct FreeBytes {
    std::size_t value = 8 * kMiB;
    int asked = 0;
    std::function<std::size_t()> source() {
        return [this] {
            ++asked;
            return value;
        };
    }
};

TEST(TrimPolicy, ConnectionsThatStayFewNeverTrimNorWalkTheHeap) {
    TrimPolicy policy;
    FreeBytes free;
    const auto t0 = Clock::time_point{} + 1h;
    EXPECT_FALSE(policy.observe(10, 2, free.source(), t0));
    EXPECT_FALSE(policy.observe(40, 0, free.source(), t0 + 2s)) << "a fall of 40 is under the 64 that count";
    EXPECT_FALSE(policy.observe(63, 0, free.source(), t0 + 4s));
    EXPECT_EQ(free.asked, 0);
}

TEST(TrimPolicy, AFallFromAPeakTrimsOnceWhenThereIsFreeHeap) {
    TrimPolicy policy;
    FreeBytes free;
    const auto t0 = Clock::time_point{} + 1h;
    EXPECT_FALSE(policy.observe(300, 280, free.source(), t0)) << "still near the peak";
    EXPECT_EQ(free.asked, 0);
    EXPECT_FALSE(policy.observe(280, 151, free.source(), t0 + 2s)) << "151 of 300 is more than half";
    EXPECT_TRUE(policy.observe(151, 20, free.source(), t0 + 4s)) << "the peak of 300 is remembered across checks";
    EXPECT_EQ(free.asked, 1);
    EXPECT_EQ(policy.peak(), 20u) << "the count starts again from what is open";
    EXPECT_FALSE(policy.observe(20, 20, free.source(), t0 + 6s)) << "nothing fell since";
    EXPECT_EQ(free.asked, 1);
}

TEST(TrimPolicy, AtMostOneTrimPerIntervalAndAFallInItWaitsForItsEnd) {
    TrimPolicy policy;
    FreeBytes free;
    const auto t0 = Clock::time_point{} + 1h;
    ASSERT_TRUE(policy.observe(500, 0, free.source(), t0));
    // A container that bursts again at once does not get a second walk of the heap yet...
    EXPECT_FALSE(policy.observe(500, 0, free.source(), t0 + 2s));
    EXPECT_FALSE(policy.observe(0, 0, free.source(), t0 + 8s));
    EXPECT_EQ(free.asked, 1);
    // ...but its peak is kept, and the check after the interval gives that memory back.
    EXPECT_TRUE(policy.observe(0, 0, free.source(), t0 + 10s));
    EXPECT_EQ(free.asked, 2);
}

TEST(TrimPolicy, TooLittleFreeHeapForgetsThePeak) {
    TrimPolicy policy;
    FreeBytes free;
    free.value = kMiB - 1;
    const auto t0 = Clock::time_point{} + 1h;
    EXPECT_FALSE(policy.observe(200, 0, free.source(), t0));
    EXPECT_EQ(free.asked, 1);
    EXPECT_EQ(policy.peak(), 0u);
    EXPECT_FALSE(policy.observe(0, 0, free.source(), t0 + 2s));
    EXPECT_EQ(free.asked, 1) << "the same fall is not weighed again";
    free.value = kMiB;
    EXPECT_TRUE(policy.observe(100, 10, free.source(), t0 + 4s)) << "a new peak is";
}

TEST(TrimPolicy, ItsOptionsSetTheFallAndTheFloor) {
    TrimPolicy::Options options;
    options.min_drop = 4;
    options.fall_divisor = 4;
    options.min_free_bytes = 0;
    options.min_interval = 0ms;
    TrimPolicy policy(options);
    FreeBytes free;
    const auto t0 = Clock::time_point{} + 1h;
    EXPECT_FALSE(policy.observe(8, 3, free.source(), t0)) << "3 of 8 is more than a quarter";
    EXPECT_TRUE(policy.observe(8, 2, free.source(), t0));
    EXPECT_TRUE(policy.observe(6, 1, free.source(), t0));
}

class FakeHeap final : public Heap {
public:
    HeapStats stats() const override {
        ++stats_calls;
        return current;
    }
    void trim() override {
        ++trims;
        current.free = current.free / 8;
        current.resident_anon -= 4 * kMiB;
    }
    HeapStats current{12 * kMiB, 6 * kMiB, 20 * kMiB};
    mutable int stats_calls = 0;
    int trims = 0;
};

TEST(HeapKeeper, TrimsTheHeapWhenTheProxiesConnectionsFallBack) {
    boost::asio::io_context io;
    FakeHeap heap;
    HeapKeeper::Connections connections;
    HeapKeeper keeper(io, heap, [&] { return connections; });
    const auto t0 = Clock::time_point{} + 1h;
    connections = {400, 380};
    EXPECT_FALSE(keeper.check(t0));
    EXPECT_EQ(heap.stats_calls, 0) << "no walk of the heap while the connections are open";
    connections = {380, 12};
    EXPECT_TRUE(keeper.check(t0 + 2s));
    EXPECT_EQ(heap.trims, 1);
    EXPECT_EQ(heap.current.free, 6 * kMiB / 8);
    connections = {12, 12};
    EXPECT_FALSE(keeper.check(t0 + 4s));
    EXPECT_EQ(heap.trims, 1);
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
