// Fan-out of daemon events (agent created, session state, ...) to every WebSocket
// client. Publishers are route handlers and services; subscribers are WebSocket
// sessions, which queue messages with their own bound so a slow client cannot make the
// daemon grow without limit. Single-threaded: everything runs on handlerd's io thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace handler::api {

// What a message is about, so a client that follows only some sessions (docs/api.md,
// "Following") is sent only theirs without reading each message's JSON again.
struct Topic {
    std::string session; // a session.event's session; empty for every other message
    std::string kind;    // and the event's kind
};

class EventHub {
public:
    using Message = std::shared_ptr<const std::string>;
    using Subscriber = std::function<void(const Message&, const Topic&)>;

    std::uint64_t subscribe(Subscriber subscriber) {
        const auto id = next_id_++;
        subscribers_.emplace(id, std::move(subscriber));
        return id;
    }
    void unsubscribe(std::uint64_t id) { subscribers_.erase(id); }

    // `json` is one complete JSON object: {"type":"agent.created","data":{...}}.
    void publish(std::string json, const Topic& topic = {}) {
        auto message = std::make_shared<const std::string>(std::move(json));
        // Copy: a subscriber may unsubscribe (or subscribe) while being called.
        auto snapshot = subscribers_;
        for (auto& [id, subscriber] : snapshot) subscriber(message, topic);
    }

    std::size_t subscriber_count() const { return subscribers_.size(); }

private:
    std::map<std::uint64_t, Subscriber> subscribers_;
    std::uint64_t next_id_ = 1;
};

} // namespace handler::api
