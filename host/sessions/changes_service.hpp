// Runs the Changes container (sessions/changes.hpp) on a worker thread of its own, one
// at a time, so a slow or stuck run never holds up handlerd's I/O thread or the session
// worker's podman commands. A few requests may wait; more are refused at once as busy
// rather than queued without bound.
#pragma once

#include "api/changes_source.hpp"
#include "runtime/container_runtime.hpp"
#include "sessions/changes.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace handler::sessions {

struct ChangesServiceOptions {
    std::string image; // the base image: it has git, sh, find and coreutils
    changes::Limits limits;
    std::size_t max_waiting = 4;
};

class ChangesService final : public api::ChangesSource {
public:
    ChangesService(runtime::ContainerRuntime& runtime, ChangesServiceOptions options);
    // Waits for the run under way; requests still waiting are answered "stopping".
    ~ChangesService() override;
    ChangesService(const ChangesService&) = delete;
    ChangesService& operator=(const ChangesService&) = delete;

    void changes(api::ChangesRequest request, std::function<void(Result<boost::json::object>)> done) override;

    // One run, on the caller's thread (the worker's body; tests call it directly).
    Result<boost::json::object> compute(const api::ChangesRequest& request);

private:
    struct Job {
        api::ChangesRequest request;
        std::function<void(Result<boost::json::object>)> done;
    };
    void work();

    runtime::ContainerRuntime& runtime_;
    const ChangesServiceOptions options_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Job> jobs_;
    bool stopping_ = false;
    std::uint64_t runs_ = 0;
    std::thread worker_; // last: started once the rest exists
};

} // namespace handler::sessions
