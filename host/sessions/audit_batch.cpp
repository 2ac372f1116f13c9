#include "sessions/audit_batch.hpp"

#include "store/store.hpp"

#include <spdlog/spdlog.h>

namespace handler::sessions {

AuditBatch::AuditBatch(boost::asio::io_context& io, store::Store& store, const Clock& clock)
    : store_(store), clock_(clock), timer_(io) {}

void AuditBatch::cancel() {
    timer_.cancel();
    flush_armed_ = false;
}

std::int64_t AuditBatch::record(const network::AuditEntry& entry) {
    if (next_id_ == 0) {
        auto last = store_.last_network_entry_id();
        if (!last) {
            spdlog::error("session {}: cannot record a network decision: {}", entry.session_id,
                          last.error().message);
            return 0;
        }
        next_id_ = *last + 1;
    }
    store::NetworkEntry row;
    row.id = next_id_++;
    row.session_id = entry.session_id;
    row.at = entry.at_ms;
    row.host = entry.host;
    row.port = entry.port;
    row.method = entry.method;
    row.path = entry.path;
    row.verdict = entry.verdict == network::Verdict::allow    ? "allow"
                  : entry.verdict == network::Verdict::learned ? "learned"
                                                               : "deny";
    row.rule = entry.rule;
    row.reason = entry.reason;
    row.secret = entry.secret;
    row.connection = entry.connection;
    if (entry.verdict == network::Verdict::deny)
        spdlog::info("session {}: refused {}:{}: {}", entry.session_id, entry.host, entry.port,
                     entry.reason);
    pending_index_[row.id] = pending_entries_.size();
    pending_entries_.push_back(std::move(row));
    schedule_flush();
    return next_id_ - 1;
}
void AuditBatch::finish(std::int64_t id, std::uint64_t up, std::uint64_t down, const std::string& reason) {
    if (id == 0) return;
    if (auto found = pending_index_.find(id); found != pending_index_.end()) {
        auto& row = pending_entries_[found->second];
        row.bytes_up = static_cast<std::int64_t>(up);
        row.bytes_down = static_cast<std::int64_t>(down);
        if (!reason.empty()) row.reason = reason;
        row.ended_at = clock_.now_ms();
    } else {
        pending_finishes_.push_back(
            {id, static_cast<std::int64_t>(up), static_cast<std::int64_t>(down), reason, clock_.now_ms()});
    }
    schedule_flush();
}
void AuditBatch::origin(store::NetworkOrigin origin) {
    pending_origins_.push_back(std::move(origin));
    schedule_flush();
}
void AuditBatch::schedule_flush() {
    if (flush_armed_) return;
    flush_armed_ = true;
    timer_.expires_after(kFlushAfter);
    timer_.async_wait([this, alive = std::weak_ptr<char>(alive_)](const boost::system::error_code& error) {
        if (!alive.lock()) return;
        flush_armed_ = false;
        if (!error) flush();
    });
}
void AuditBatch::flush() {
    if (pending_entries_.empty() && pending_finishes_.empty() && pending_origins_.empty()) return;
    if (auto written = store_.write_network_batch(pending_entries_, pending_finishes_, pending_origins_); !written)
        spdlog::error("cannot record {} network decisions: {}",
                      pending_entries_.size() + pending_finishes_.size() + pending_origins_.size(),
                      written.error().message);
    pending_entries_.clear();
    pending_finishes_.clear();
    pending_origins_.clear();
    pending_index_.clear();
}

} // namespace handler::sessions
