// handlerd's heap after a peak of proxy connections (bench/README.md, soak.sh).
//
// Every session's proxy runs on handlerd's one io thread, so its buffers, parsers and TLS
// state come from glibc's main heap. When many connections are open at once (a burst, or
// the requests that piled up while the machine stalled), the heap grows to hold them all;
// when they close, glibc keeps the freed pages. It gives back only the top of the heap by
// itself, and the pages in the middle, between blocks still in use, stay resident until
// malloc_trim(0) hands them back with madvise. Measured in the soak: after a burst of
// 2,043 connections at once, handlerd's anonymous memory went from 7.9 to 11.3 MiB, and
// malloc_trim(0) then took it to 4.7 MiB; nothing it held was in use.
//
// So handlerd trims once that freed memory is there to give back, and only then: when
// its proxies' connections have fallen from a peak, or when what is resident but not in
// use (RssAnon less what glibc has handed out) has grown by 2 MiB since the last trim.
// The second catches what the first cannot see: in the 10-minute soak the peak was of
// requests queued on kept-alive connections (1,003 at once), not of connections, and
// handlerd's anonymous memory went from 11 to 14.8 MiB with no fall of connections to
// trigger on; given back after the load it was 7.7 MiB. A trim walks the heap (0.25
// to 1.6 ms in the soaks here, once 12 ms) and what it gives back is paid for again
// with page faults when the next burst comes, so at most one per 10 s. HeapKeeper
// checks every kCheckEvery; TrimPolicy says when (pure, so its rule is tested without a
// heap); Heap is glibc behind an interface.
//
// Threading: the io thread.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // Asio false positives (server_state.hpp)
#include <boost/asio/steady_timer.hpp>
#pragma GCC diagnostic pop

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

namespace handler::daemon {

// Bytes, as glibc and the kernel count them.
struct HeapStats {
    std::size_t in_use = 0;        // allocated and not freed (mallinfo2: uordblks + hblkhd)
    std::size_t free = 0;          // freed and kept by glibc in its arenas (fordblks)
    std::size_t resident_anon = 0; // the process's anonymous resident memory (RssAnon)
};

class Heap {
public:
    virtual ~Heap() = default;
    virtual HeapStats stats() const = 0;
    // Gives free pages back to the kernel (malloc_trim(0)).
    virtual void trim() = 0;
};

// glibc's: mallinfo2 and malloc_trim(0) on every arena, RssAnon from /proc/self/status.
std::unique_ptr<Heap> make_system_heap();

// Whether to trim now, from the proxies' connections (the most open at once since the
// last check, `peak`, and those open now) and the heap.
class TrimPolicy {
public:
    struct Options {
        // A fall of connections that counts: from a peak at least this many above now...
        std::size_t min_drop = 64;
        // ...and to at most this part of it (2: half or fewer still open)...
        std::size_t fall_divisor = 2;
        // ...with at least this much free in the heap to give back.
        std::size_t min_free_bytes = 1024 * 1024;
        // Or: resident but not in use has grown by this much since the last trim.
        std::size_t min_slack_growth_bytes = 2 * 1024 * 1024;
        // At most one trim per this (a container that opens bursts on purpose gets one
        // walk of the heap per interval, whatever it does).
        std::chrono::milliseconds min_interval{10'000};
    };
    enum class Why { none = 0, connections_fell, slack_grew };

    TrimPolicy() : TrimPolicy(Options{}) {}
    explicit TrimPolicy(Options options) : options_(options) {}

    Why observe(std::size_t peak, std::size_t open, const HeapStats& heap, std::chrono::steady_clock::time_point now);
    // After a trim: what the heap holds then is the new baseline for the slack.
    void trimmed(const HeapStats& heap);
    // The highest count since the last trim (or since the fall that found too little to give back).
    std::size_t peak() const { return peak_; }
    // Resident anonymous memory that glibc has not handed out (stacks and the like
    // included, which do not change).
    static std::size_t slack(const HeapStats& heap) {
        return heap.resident_anon > heap.in_use ? heap.resident_anon - heap.in_use : 0;
    }

private:
    Options options_;
    std::size_t peak_ = 0;
    std::optional<std::size_t> baseline_slack_; // at the first check, then after each trim
    std::optional<std::chrono::steady_clock::time_point> last_trim_;
};

// The check, on a timer: every kCheckEvery it asks `connections` for the proxies' peak
// and open counts (both across every session) and trims when the policy says so, logging
// what was given back.
class HeapKeeper {
public:
    struct Connections {
        std::size_t peak = 0; // the most open at once since the last call
        std::size_t open = 0;
    };
    static constexpr std::chrono::milliseconds kCheckEvery{2'000};
    // With log_level debug, a line of what the heap holds every this many checks (a minute).
    static constexpr unsigned kReportEvery = 30;

    // `heap` must outlive the keeper.
    HeapKeeper(boost::asio::io_context& io, Heap& heap, std::function<Connections()> connections,
               TrimPolicy policy = TrimPolicy());
    void start();
    void stop();
    // One check, as the timer makes it; true when it trimmed.
    bool check(std::chrono::steady_clock::time_point now);

private:
    void arm();

    Heap& heap_;
    std::function<Connections()> connections_;
    TrimPolicy policy_;
    boost::asio::steady_timer timer_;
    unsigned checks_ = 0;
    bool stopped_ = true;
};

} // namespace handler::daemon
