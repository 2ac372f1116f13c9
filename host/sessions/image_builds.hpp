// The harness image builds of one handlerd run (docs/api.md, "Images"): each one's state,
// the session waiting for it and the end of its log, so that a client shows a build's
// progress rather than a session frozen in `starting`. Thread-safe: lines arrive on the
// builder thread, the API reads on the io thread.
#pragma once

#include "api/session_control.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace handler::sessions {

class ImageBuilds {
public:
    // Keeps every build under way and the last `finished_kept` that ended; each log's
    // last `log_bytes`.
    explicit ImageBuilds(std::size_t finished_kept = 16, std::size_t log_bytes = api::kImageBuildLogBytes)
        : finished_kept_(finished_kept), log_bytes_(log_bytes) {}

    // A build of `harness`'s image begins for `session`; its id.
    std::int64_t started(std::string harness, std::string session, std::int64_t now_ms);
    // One line of its progress (already bounded and printable: runtime::ProgressCallback).
    void line(std::int64_t id, std::string_view text);
    // It ended: ready with `image`, or failed with `message`.
    void ended(std::int64_t id, bool ok, std::string image, std::string message, std::int64_t now_ms);

    std::vector<api::ImageBuild> list() const;
    // The build, or an empty one (id 0) when it is not kept.
    api::ImageBuild get(std::int64_t id) const;

private:
    api::ImageBuild* find(std::int64_t id);

    mutable std::mutex mutex_;
    std::deque<api::ImageBuild> builds_; // oldest first
    std::int64_t next_id_ = 1;
    const std::size_t finished_kept_;
    const std::size_t log_bytes_;
};

} // namespace handler::sessions
