// A CommandRunner that runs nothing: it records every request and answers from a script
// (STYLE.md: fakes live in tests/support). Unscripted calls succeed with exit 0 and no
// output, so a test scripts only the answers it cares about.
#pragma once

#include "runtime/process.hpp"

#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace handler::testing {

class FakeCommandRunner final : public runtime::CommandRunner {
public:
    Result<runtime::CommandResult> run(const runtime::CommandRequest& request) override {
        requests.push_back(request);
        if (on_run) on_run(request);
        if (script_.empty()) return runtime::CommandResult{};
        Result<runtime::CommandResult> answer = std::move(script_.front());
        script_.pop_front();
        return answer;
    }

    // The next run exits with `exit_code` and prints the given text.
    void answer(int exit_code, std::string stdout_text = {}, std::string stderr_text = {}) {
        script_.push_back(runtime::CommandResult{exit_code, std::move(stdout_text),
                                                 std::move(stderr_text)});
    }
    // The next run cannot run at all (program missing, timeout).
    void fail(Error error) { script_.push_back(std::move(error)); }

    // The argv of the last request.
    const std::vector<std::string>& last_argv() const { return requests.back().argv; }

    std::vector<runtime::CommandRequest> requests;
    // Called before each answer, to do what the real program would (write a file).
    std::function<void(const runtime::CommandRequest&)> on_run;

private:
    std::deque<Result<runtime::CommandResult>> script_;
};

} // namespace handler::testing
