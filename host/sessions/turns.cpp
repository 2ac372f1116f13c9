#include "sessions/turns.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>

namespace handler::sessions {

namespace json = boost::json;

std::string prompt_id_of(std::string_view payload) {
    boost::system::error_code error;
    const json::value value = json::parse(payload, error);
    const json::object* object = error ? nullptr : value.if_object();
    const json::value* id = object == nullptr ? nullptr : object->if_contains("promptId");
    return id != nullptr && id->is_string() ? std::string(id->get_string()) : std::string();
}

void Turns::observe(std::string_view kind, std::string_view payload) {
    if (kind == "result") {
        running_.reset();
        return;
    }
    if (kind != "user_prompt" && kind != "prompt_queued" && kind != "prompt_withdrawn") return;
    const std::string id = prompt_id_of(payload);
    const auto waiting = std::find_if(queued_.begin(), queued_.end(), [&](const Prompt& p) { return p.id == id; });
    if (kind == "user_prompt") {
        // A one-shot run's prompt has no id and is a turn all the same.
        if (waiting != queued_.end()) queued_.erase(waiting);
        running_ = id;
    } else if (kind == "prompt_queued") {
        if (!id.empty() && waiting == queued_.end()) queued_.push_back({id, std::string(payload)});
    } else if (waiting != queued_.end()) {
        queued_.erase(waiting);
    }
}

bool Turns::is_queued(std::string_view prompt_id) const {
    return std::any_of(queued_.begin(), queued_.end(), [&](const Prompt& p) { return p.id == prompt_id; });
}

std::optional<Turns::Prompt> Turns::next() const {
    if (running_ || queued_.empty()) return std::nullopt;
    return queued_.front();
}

} // namespace handler::sessions
