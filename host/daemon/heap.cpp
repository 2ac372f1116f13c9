#include "daemon/heap.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace handler::daemon {
namespace {

class SystemHeap final : public Heap {
public:
    HeapStats stats() const override {
        HeapStats stats;
        const struct mallinfo2 info = ::mallinfo2(); // every arena's, summed
        stats.in_use = info.uordblks + info.hblkhd;
        stats.free = info.fordblks;
        std::ifstream status("/proc/self/status");
        for (std::string line; std::getline(status, line);) {
            if (!line.starts_with("RssAnon:")) continue;
            stats.resident_anon = std::stoull(line.substr(8)) * 1024; // "RssAnon:   6724 kB"
            break;
        }
        return stats;
    }
    void trim() override { ::malloc_trim(0); }
};

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

} // namespace

std::unique_ptr<Heap> make_system_heap() { return std::make_unique<SystemHeap>(); }

TrimPolicy::Why TrimPolicy::observe(std::size_t peak, std::size_t open, const HeapStats& heap,
                                    std::chrono::steady_clock::time_point now) {
    peak_ = std::max({peak_, peak, open});
    if (!baseline_slack_) baseline_slack_ = slack(heap);
    // Too soon after the last trim: the peak is kept, and the next check may trim.
    if (last_trim_ && now - *last_trim_ < options_.min_interval) return Why::none;
    Why why = Why::none;
    if (peak_ >= open + options_.min_drop && open * options_.fall_divisor <= peak_) {
        if (heap.free >= options_.min_free_bytes) why = Why::connections_fell;
        else peak_ = open; // this peak left nothing worth giving back
    }
    if (why == Why::none && slack(heap) >= *baseline_slack_ + options_.min_slack_growth_bytes) why = Why::slack_grew;
    if (why == Why::none) return why;
    last_trim_ = now;
    peak_ = open;
    return why;
}

void TrimPolicy::trimmed(const HeapStats& heap) { baseline_slack_ = slack(heap); }

HeapKeeper::HeapKeeper(boost::asio::io_context& io, Heap& heap, std::function<Connections()> connections,
                       TrimPolicy policy)
    : heap_(heap), connections_(std::move(connections)), policy_(policy), timer_(io) {}

void HeapKeeper::start() {
    stopped_ = false;
    arm();
}

void HeapKeeper::stop() {
    stopped_ = true;
    timer_.cancel();
}

void HeapKeeper::arm() {
    if (stopped_) return;
    timer_.expires_after(kCheckEvery);
    timer_.async_wait([this](const boost::system::error_code& error) {
        if (error || stopped_) return;
        check(std::chrono::steady_clock::now());
        arm();
    });
}

bool HeapKeeper::check(std::chrono::steady_clock::time_point now) {
    const Connections connections = connections_();
    const std::size_t peak = std::max({policy_.peak(), connections.peak, connections.open});
    const HeapStats before = heap_.stats();
    // What the heap holds, now and then, for whoever looks into memory (log_level debug).
    if (++checks_ % kReportEvery == 0)
        spdlog::debug("memory: heap {:.2f} MiB in use, {:.2f} MiB free in glibc's arenas, resident (anonymous) "
                      "{:.2f} MiB; proxy connections {} open, at most {} since the last trim",
                      mib(before.in_use), mib(before.free), mib(before.resident_anon), connections.open, peak);
    const auto why = policy_.observe(connections.peak, connections.open, before, now);
    if (why == TrimPolicy::Why::none) return false;
    const auto started = std::chrono::steady_clock::now();
    heap_.trim();
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    const HeapStats after = heap_.stats();
    policy_.trimmed(after);
    spdlog::info("memory: {}; glibc's free heap given back: resident (anonymous) {:.2f} -> {:.2f} MiB, "
                 "{:.2f} MiB in use, in {} us",
                 why == TrimPolicy::Why::connections_fell
                     ? fmt::format("the proxies' connections fell from {} to {} open", peak, connections.open)
                     : fmt::format("{:.2f} MiB resident but not in use", mib(TrimPolicy::slack(before))),
                 mib(before.resident_anon), mib(after.resident_anon), mib(after.in_use), took.count());
    return true;
}

} // namespace handler::daemon
