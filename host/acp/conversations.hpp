// What `handler acp` needs of handlerd, as an interface: the agent (agent.*) is tested
// against a fake (tests/unit/acp/fake_conversations.hpp); handlerd_port.* is the real one,
// HTTP and WebSocket over handlerd's unix socket (docs/conversations.md, docs/api.md).
//
// Every call is asynchronous and answers on the caller's thread (the one io_context of
// handler acp), later, never from inside the call. Records are the API's JSON objects,
// read by the agent with the same care as anything else from outside. An error's code
// follows the HTTP status (404 not_found, 409 conflict, 400 invalid_argument, ...;
// unavailable when handlerd did not answer), its message is handlerd's.
#pragma once

#include "acp/updates.hpp"
#include "core/result.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace handler::acp {

template <class T>
using Reply = std::function<void(Result<T>)>;

struct PromptAccepted {
    std::string prompt_id;
    bool queued = false; // another turn runs: it waits (prompt_queued)
};

// Receives one conversation's events in order, from the seq it was subscribed after.
class EventSink {
public:
    virtual ~EventSink() = default;
    virtual void event(ConversationEvent event) = 0;
    // The conversation's container ended (or the session is gone): no more events until it
    // is resumed and subscribed again. A dropped connection to handlerd is not an end: the
    // subscription reconnects by itself and goes on after the last seq.
    virtual void ended(std::string reason) = 0;
};

// Ends the subscription when destroyed; nothing reaches the sink afterwards.
class Subscription {
public:
    virtual ~Subscription() = default;
};

class Conversations {
public:
    virtual ~Conversations() = default;

    // GET /api/v1/projects?path=: the deepest registered project containing `path`.
    virtual void find_project(const std::string& path, Reply<std::optional<boost::json::object>> reply) = 0;
    virtual void projects(Reply<boost::json::array> reply) = 0;
    virtual void agents(std::int64_t project_id, Reply<boost::json::array> reply) = 0;
    virtual void accounts(Reply<boost::json::array> reply) = 0;
    virtual void plugins(Reply<boost::json::array> reply) = 0;
    virtual void sessions(Reply<boost::json::array> reply) = 0;
    virtual void session(const std::string& id, Reply<boost::json::object> reply) = 0;
    // POST /api/v1/sessions with `body` ({"directory","name","conversation":true,...}).
    virtual void start(boost::json::object body, Reply<boost::json::object> reply) = 0;
    // Every stored event after `after_seq`, oldest first.
    virtual void history(const std::string& id, std::int64_t after_seq,
                         Reply<std::vector<ConversationEvent>> reply) = 0;
    virtual void prompt(const std::string& id, const api::Prompt& prompt, Reply<PromptAccepted> reply) = 0;
    virtual void withdraw(const std::string& id, const std::string& prompt_id, Reply<void> reply) = 0;
    virtual void cancel(const std::string& id, Reply<void> reply) = 0;
    virtual void resume(const std::string& id, Reply<boost::json::object> reply) = 0;
    // POST .../config {"name","value"}: "now" or "on_resume".
    virtual void configure(const std::string& id, const std::string& name, const std::string& value,
                           Reply<std::string> reply) = 0;
    virtual void answer(const std::string& id, const std::string& tool_call_id, const std::string& option_id,
                        Reply<void> reply) = 0;
    // The live events after `after_seq`, until the conversation ends or the subscription
    // is destroyed.
    virtual std::unique_ptr<Subscription> subscribe(const std::string& id, std::int64_t after_seq,
                                                    EventSink& sink) = 0;
};

} // namespace handler::acp
