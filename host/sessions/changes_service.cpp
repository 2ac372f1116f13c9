#include "sessions/changes_service.hpp"

#include "core/utf8.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

namespace handler::sessions {

ChangesService::ChangesService(runtime::ContainerRuntime& runtime, ChangesServiceOptions options)
    : runtime_(runtime), options_(std::move(options)), worker_([this] { work(); }) {}

ChangesService::~ChangesService() {
    std::deque<Job> left;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        left.swap(jobs_);
    }
    wake_.notify_all();
    for (auto& job : left) job.done(make_error(ErrorCode::unavailable, "handlerd is stopping"));
    if (worker_.joinable()) worker_.join();
}

void ChangesService::changes(api::ChangesRequest request, std::function<void(Result<boost::json::object>)> done) {
    {
        std::lock_guard lock(mutex_);
        if (!stopping_ && jobs_.size() < options_.max_waiting) {
            jobs_.push_back({std::move(request), std::move(done)});
            wake_.notify_one();
            return;
        }
    }
    done(make_error(ErrorCode::unavailable, stopping_ ? "handlerd is stopping"
                                                      : "too many Changes requests are waiting (" +
                                                            std::to_string(options_.max_waiting) +
                                                            "); try again in a few seconds"));
}

void ChangesService::work() {
    while (true) {
        Job job;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        Result<boost::json::object> answer = make_error(ErrorCode::internal, "the Changes run ended without an answer");
        try {
            answer = compute(job.request);
        } catch (const std::exception& error) {
            answer = make_error(ErrorCode::internal, std::string("computing the Changes failed: ") + error.what());
        }
        job.done(std::move(answer));
    }
}

Result<boost::json::object> ChangesService::compute(const api::ChangesRequest& request) {
    std::uint64_t run = 0;
    {
        std::lock_guard lock(mutex_);
        run = ++runs_;
    }
    // Unique per handlerd and run, so two handlerds of one user never share a name.
    const std::string task_id = "changes-" + request.session_id + "-" + std::to_string(::getpid()) + "-" +
                                std::to_string(run);
    auto spec = changes::container_spec(options_.image, request.project, task_id, request.since_ms, options_.limits);
    runtime::TaskOptions task;
    task.timeout_ms = options_.limits.timeout_ms;
    // Eight parts of at most max_part_bytes each, and their headers.
    task.output_limit_bytes = 8 * options_.limits.max_part_bytes + 4096;
    auto ran = runtime_.run_task(spec, task);
    if (!ran) {
        Error error = ran.take_error();
        error.message = "the Changes of session " + request.session_id + " could not be computed: " + error.message;
        return error;
    }
    if (ran->exit_code != 0) {
        std::string said = with_valid_utf8(ran->stderr_text.substr(0, 1000));
        spdlog::warn("changes of {}: the container exited {}: {}", request.session_id, ran->exit_code, said);
        return make_error(ErrorCode::unavailable,
                          "the Changes container of session " + request.session_id + " exited " +
                              std::to_string(ran->exit_code) + (said.empty() ? "" : ": " + said));
    }
    auto parsed = changes::parse_output(ran->stdout_text, options_.limits);
    if (!parsed) return parsed.take_error();
    return changes::to_json(*parsed);
}

} // namespace handler::sessions
