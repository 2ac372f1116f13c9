// What every session's egress proxy decided, on its way to the store (the network log,
// `handler network log`). Batched: decisions and ends collect in memory and go to SQLite
// in one transaction at most kFlushAfter later (and at shut-down). A transaction per
// decision cost more than the proxy's own work (about 100 µs per connection, measured),
// on the one io thread every session's proxy shares. Ids are handed out here, in order,
// so the log reads the same as before; it is just up to kFlushAfter behind.
//
// Threading: the io thread only.
#pragma once

#include "core/clock.hpp"
#include "network/egress_proxy.hpp"
#include "store/records.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference" // Asio false positives (server_state.hpp)
#include <boost/asio/steady_timer.hpp>
#pragma GCC diagnostic pop

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace handler::store {
class Store;
}

namespace handler::sessions {

class AuditBatch final : public network::AuditSink {
public:
    static constexpr std::chrono::milliseconds kFlushAfter{20};

    // All three must outlive the batch.
    AuditBatch(boost::asio::io_context& io, store::Store& store, const Clock& clock);

    std::int64_t record(const network::AuditEntry& entry) override;
    void finish(std::int64_t id, std::uint64_t up, std::uint64_t down, const std::string& reason) override;
    // Who made a connection (connection_origin.hpp), written with the same batch.
    void origin(store::NetworkOrigin origin);
    // Writes what is pending now.
    void flush();
    // No flush is scheduled any more (handlerd is stopping: flush() follows).
    void cancel();

private:
    void schedule_flush();

    store::Store& store_;
    const Clock& clock_;
    boost::asio::steady_timer timer_;
    bool flush_armed_ = false;
    std::shared_ptr<char> alive_ = std::make_shared<char>(); // the timer's handler may outlive us
    std::int64_t next_id_ = 0; // 0: not read from the store yet
    std::vector<store::NetworkEntry> pending_entries_;
    std::map<std::int64_t, std::size_t> pending_index_; // id -> position in pending_entries_
    std::vector<store::NetworkFinish> pending_finishes_;
    std::vector<store::NetworkOrigin> pending_origins_;
};

} // namespace handler::sessions
