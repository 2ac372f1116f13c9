#include "sessions/image_builds.hpp"

#include <algorithm>

namespace handler::sessions {

std::int64_t ImageBuilds::started(std::string harness, std::string session, std::int64_t now_ms) {
    std::lock_guard lock(mutex_);
    api::ImageBuild build;
    build.id = next_id_++;
    build.harness = std::move(harness);
    build.session = std::move(session);
    build.state = "building";
    build.started_at = now_ms;
    builds_.push_back(std::move(build));
    return builds_.back().id;
}

api::ImageBuild* ImageBuilds::find(std::int64_t id) {
    const auto found = std::find_if(builds_.begin(), builds_.end(), [id](const auto& b) { return b.id == id; });
    return found == builds_.end() ? nullptr : &*found;
}

void ImageBuilds::line(std::int64_t id, std::string_view text) {
    std::lock_guard lock(mutex_);
    api::ImageBuild* build = find(id);
    if (build == nullptr) return;
    build->log.append(text);
    build->log.push_back('\n');
    if (build->log.size() <= log_bytes_) return;
    // Keep the end, where an error is, and start at a line so no line is shown cut.
    std::size_t cut = build->log.size() - log_bytes_;
    const auto newline = build->log.find('\n', cut);
    cut = newline == std::string::npos ? build->log.size() : newline + 1;
    build->log.erase(0, cut);
    build->log_truncated = true;
}

void ImageBuilds::ended(std::int64_t id, bool ok, std::string image, std::string message, std::int64_t now_ms) {
    std::lock_guard lock(mutex_);
    api::ImageBuild* build = find(id);
    if (build == nullptr) return;
    build->state = ok ? "ready" : "failed";
    build->image = std::move(image);
    build->message = std::move(message);
    build->ended_at = now_ms;
    // The finished ones beyond what is kept go, oldest first; builds under way stay.
    std::size_t finished = static_cast<std::size_t>(
        std::count_if(builds_.begin(), builds_.end(), [](const auto& b) { return b.state != "building"; }));
    for (auto it = builds_.begin(); finished > finished_kept_ && it != builds_.end();) {
        if (it->state == "building") {
            ++it;
            continue;
        }
        it = builds_.erase(it);
        --finished;
    }
}

std::vector<api::ImageBuild> ImageBuilds::list() const {
    std::lock_guard lock(mutex_);
    return {builds_.begin(), builds_.end()};
}

api::ImageBuild ImageBuilds::get(std::int64_t id) const {
    std::lock_guard lock(mutex_);
    const auto found = std::find_if(builds_.begin(), builds_.end(), [id](const auto& b) { return b.id == id; });
    return found == builds_.end() ? api::ImageBuild{} : *found;
}

} // namespace handler::sessions
