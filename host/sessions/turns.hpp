// The turns of a conversation (docs/conversations.md): one runs at a time, the prompts
// sent meanwhile wait in order and may be withdrawn. Kept as the stored events say, so a
// restarted handlerd rebuilds it by following them again, and pure, so it is unit-tested
// without a session.
//
// Threading: the io thread only (it belongs to a Channel).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace handler::sessions {

class Turns {
public:
    struct Prompt {
        std::string id;      // "p_…"
        std::string payload; // the user_prompt event's payload: {"promptId","content"}
    };

    // Follows one stored event: user_prompt starts a turn (taking its prompt off the
    // queue), result ends the running one, prompt_queued and prompt_withdrawn change the
    // queue. Other kinds change nothing.
    void observe(std::string_view kind, std::string_view payload);

    bool running() const { return running_.has_value(); }
    const std::optional<std::string>& running_id() const { return running_; }
    const std::deque<Prompt>& queued() const { return queued_; }
    bool is_queued(std::string_view prompt_id) const;
    // The prompt to start now: the oldest waiting, when no turn runs.
    std::optional<Prompt> next() const;

private:
    std::optional<std::string> running_;
    std::deque<Prompt> queued_;
};

// The prompt id a user_prompt, prompt_queued or prompt_withdrawn payload names; empty when
// it names none (a one-shot run's prompt).
std::string prompt_id_of(std::string_view payload);

} // namespace handler::sessions
