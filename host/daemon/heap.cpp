#include "daemon/heap.hpp"

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

bool TrimPolicy::observe(std::size_t peak, std::size_t open, const std::function<std::size_t()>& free_bytes,
                         std::chrono::steady_clock::time_point now) {
    peak_ = std::max({peak_, peak, open});
    const bool fallen = peak_ >= open + options_.min_drop && open * options_.fall_divisor <= peak_;
    if (!fallen) return false;
    // Too soon after the last trim: the peak is kept, and the next check may trim.
    if (last_trim_ && now - *last_trim_ < options_.min_interval) return false;
    if (free_bytes() < options_.min_free_bytes) {
        peak_ = open; // this peak left nothing worth giving back
        return false;
    }
    last_trim_ = now;
    peak_ = open;
    return true;
}

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
    // What the heap holds, now and then, for whoever looks into memory (log_level debug).
    if (++checks_ % kReportEvery == 0 && spdlog::should_log(spdlog::level::debug)) {
        const HeapStats now_stats = heap_.stats();
        spdlog::debug("memory: heap {:.2f} MiB in use, {:.2f} MiB free in glibc's arenas, resident (anonymous) "
                      "{:.2f} MiB; proxy connections {} open, at most {} since the last trim",
                      mib(now_stats.in_use), mib(now_stats.free), mib(now_stats.resident_anon), connections.open,
                      peak);
    }
    std::optional<HeapStats> before;
    const bool trim = policy_.observe(connections.peak, connections.open, [&] {
        before = heap_.stats();
        return before->free;
    }, now);
    if (!trim) return false;
    const auto started = std::chrono::steady_clock::now();
    heap_.trim();
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
    const HeapStats after = heap_.stats();
    spdlog::info("memory: the proxies' connections fell from {} to {} open; glibc's free heap given back: "
                 "{:.2f} -> {:.2f} MiB free, resident (anonymous) {:.2f} -> {:.2f} MiB, in {} us",
                 peak, connections.open, mib(before->free), mib(after.free), mib(before->resident_anon),
                 mib(after.resident_anon), took.count());
    return true;
}

} // namespace handler::daemon
