// A handlerd for `handler acp`'s agent: the Conversations port in memory. Projects,
// agents, accounts, plugins and sessions are the API's JSON; each conversation keeps its
// events and a turn queue as docs/conversations.md describes (one turn at a time, queued
// prompts, withdraw, cancel). Every answer and every event delivery is deferred to run(),
// in order, as the real port answers later on the io thread.
#pragma once

#include "acp/conversations.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace handler::testing {

class FakeConversations final : public acp::Conversations {
public:
    struct Conversation {
        boost::json::object record;
        std::vector<acp::ConversationEvent> events;
        std::optional<std::string> running;
        std::deque<std::string> queued;
        std::map<std::string, std::string> texts; // prompt id → text
        std::map<std::string, boost::json::array> images; // prompt id → its images, when it has some
    };

    // ---- what the test sets up and looks at --------------------------------------------
    boost::json::array projects_json;
    std::map<std::int64_t, boost::json::array> agents_json;
    boost::json::array accounts_json;
    boost::json::array plugins_json;
    std::map<std::string, Conversation> conversations;
    std::vector<std::string> calls;          // "POST /prompts s_1 hello", ...
    std::vector<boost::json::object> starts; // bodies of POST /api/v1/sessions
    std::map<std::string, Error> fail_next;  // call name ("prompt", "start"...) → its error, once
    // Events a new conversation records as it starts (kind, payload).
    std::vector<std::pair<std::string, boost::json::object>> start_events;
    // When set, a prompt's user_prompt event is delivered before the POST's answer.
    bool events_before_reply = false;
    std::int64_t now_ms = 1'760'000'000'000;

    // Runs every deferred answer and delivery, including those they cause.
    void run() {
        while (!queue_.empty()) {
            auto next = std::move(queue_.front());
            queue_.pop_front();
            next();
        }
    }

    void add_project(std::int64_t id, const std::string& name, const std::string& path) {
        projects_json.push_back({{"id", id}, {"name", name}, {"path", path}});
    }
    void add_agent(std::int64_t project, std::int64_t id, const std::string& name, const std::string& harness,
                   boost::json::value account = nullptr, const std::string& network = "filtered") {
        agents_json[project].push_back({{"id", id}, {"name", name}, {"project", project}, {"harness", harness},
                                        {"account", account}, {"network_mode", network}});
    }
    void add_plugin(const std::string& id, boost::json::object harness) {
        plugins_json.push_back({{"id", id}, {"kind", "harness"}, {"state", "loaded"}, {"harness", std::move(harness)}});
    }
    // What the agent's tests (and its fuzz target) start from: projects "app" (1,
    // /home/u/app) and "other" (2), agent 7 "claude" of claude-code with account "work"
    // in app, and a claude-code plugin with two models, two modes and two thinking levels.
    void add_claude_project() {
        add_project(1, "app", "/home/u/app");
        add_project(2, "other", "/home/u/other");
        add_agent(1, 7, "claude", "claude-code", "work");
        accounts_json = boost::json::parse(R"([{"name":"work","kind":"anthropic-api-key","has_secret":true}])").as_array();
        add_plugin("claude-code", boost::json::parse(R"({
            "models":[{"id":"sonnet","label":"Sonnet"},{"id":"opus","label":"Opus"}],
            "modes":[{"id":"default","label":"Ask before acting"},{"id":"plan","label":"Plan only"}],
            "thinking_levels":["low","high"],"launch_modes":["headless","conversation"],
            "credentials":[{"kind":"anthropic-api-key"}]})").as_object());
    }
    // A conversation that exists already (for load, resume, list).
    Conversation& add_conversation(const std::string& id, std::int64_t project, std::int64_t agent,
                                   const std::string& harness, const std::string& state = "running") {
        auto& conversation = conversations[id];
        conversation.record = {{"id", id}, {"agent", agent}, {"project", project}, {"harness", harness},
                               {"state", state}, {"mode", "conversation"}, {"title", nullptr},
                               {"network_mode", nullptr}, {"created_at", now_ms}, {"updated_at", now_ms}};
        return conversation;
    }

    // Records an event as handlerd would and delivers it to the subscribers.
    void emit(const std::string& id, const std::string& kind, boost::json::object payload) {
        auto& conversation = conversations.at(id);
        acp::ConversationEvent event{static_cast<std::int64_t>(conversation.events.size()) + 1, ++now_ms, kind,
                                     std::move(payload)};
        conversation.events.push_back(event);
        for (auto* subscriber : subscribers_[id])
            queue_.push_back([this, id, subscriber, event] {
                if (alive(id, subscriber)) subscriber->sink->event(event);
            });
    }
    // The harness ends the running turn; the next queued prompt starts.
    void finish_turn(const std::string& id, const std::string& stop_reason = "end_turn") {
        auto& conversation = conversations.at(id);
        conversation.running.reset();
        emit(id, "result", {{"stopReason", stop_reason}});
        start_next(id);
    }
    // The conversation's container ends.
    void end(const std::string& id, const std::string& reason = "exited with code 0") {
        conversations.at(id).record["state"] = "exited";
        for (auto* subscriber : subscribers_[id])
            queue_.push_back([this, id, subscriber, reason] {
                if (alive(id, subscriber)) subscriber->sink->ended(reason);
            });
    }
    std::size_t subscribers(const std::string& id) { return subscribers_[id].size(); }
    std::size_t count_calls(const std::string& prefix) const {
        return static_cast<std::size_t>(std::count_if(calls.begin(), calls.end(),
                                                      [&](const std::string& call) { return call.rfind(prefix, 0) == 0; }));
    }

    // ---- the port ----------------------------------------------------------------------
    void find_project(const std::string& path, acp::Reply<std::optional<boost::json::object>> reply) override {
        calls.push_back("GET /projects?path=" + path);
        if (auto error = take("find_project")) return later(reply, *error);
        std::optional<boost::json::object> best;
        std::size_t best_length = 0;
        for (const auto& entry : projects_json) {
            const auto& project = entry.as_object();
            const std::string folder(project.at("path").as_string());
            if (acp::path_within(path, folder) && folder.size() >= best_length) {
                best = project;
                best_length = folder.size();
            }
        }
        later(reply, Result<std::optional<boost::json::object>>(std::move(best)));
    }
    void projects(acp::Reply<boost::json::array> reply) override {
        calls.push_back("GET /projects");
        later(reply, Result<boost::json::array>(projects_json));
    }
    void agents(std::int64_t project, acp::Reply<boost::json::array> reply) override {
        calls.push_back("GET /agents?project=" + std::to_string(project));
        later(reply, Result<boost::json::array>(agents_json[project]));
    }
    void accounts(acp::Reply<boost::json::array> reply) override {
        calls.push_back("GET /accounts");
        later(reply, Result<boost::json::array>(accounts_json));
    }
    void plugins(acp::Reply<boost::json::array> reply) override {
        calls.push_back("GET /plugins");
        later(reply, Result<boost::json::array>(plugins_json));
    }
    void sessions(acp::Reply<boost::json::array> reply) override {
        calls.push_back("GET /sessions");
        boost::json::array out;
        for (const auto& [id, conversation] : conversations) out.push_back(conversation.record);
        later(reply, Result<boost::json::array>(std::move(out)));
    }
    void session(const std::string& id, acp::Reply<boost::json::object> reply) override {
        calls.push_back("GET /sessions/" + id);
        auto found = conversations.find(id);
        if (found == conversations.end())
            return later(reply, Result<boost::json::object>(make_error(ErrorCode::not_found, "session " + id + " does not exist")));
        later(reply, Result<boost::json::object>(found->second.record));
    }
    void start(boost::json::object body, acp::Reply<boost::json::object> reply) override {
        calls.push_back("POST /sessions " + boost::json::serialize(body));
        starts.push_back(body);
        if (auto error = take("start")) return later(reply, *error);
        const std::string id = "s_" + std::to_string(conversations.size() + 1);
        std::int64_t project = 0, agent = 0;
        std::string harness;
        for (const auto& entry : projects_json)
            if (acp::path_within(std::string(body.at("directory").as_string()),
                                 std::string(entry.as_object().at("path").as_string())))
                project = entry.as_object().at("id").as_int64();
        for (const auto& entry : agents_json[project])
            if (entry.as_object().at("name") == body.at("name")) {
                agent = entry.as_object().at("id").as_int64();
                harness = std::string(entry.as_object().at("harness").as_string());
            }
        auto& conversation = add_conversation(id, project, agent, harness, "starting");
        later(reply, Result<boost::json::object>(conversation.record));
        for (const auto& [kind, payload] : start_events) emit(id, kind, payload);
    }
    void history(const std::string& id, std::int64_t after, acp::Reply<std::vector<acp::ConversationEvent>> reply) override {
        calls.push_back("GET /events " + id + " after " + std::to_string(after));
        std::vector<acp::ConversationEvent> out;
        for (const auto& event : conversations.at(id).events)
            if (event.seq > after) out.push_back(event);
        later(reply, Result<std::vector<acp::ConversationEvent>>(std::move(out)));
    }
    void prompt(const std::string& id, const api::Prompt& prompt, acp::Reply<acp::PromptAccepted> reply) override {
        const std::string& text = prompt.text;
        std::string call = "POST /prompts " + id + " " + text;
        boost::json::array images;
        for (const auto& image : prompt.images) {
            call += " [" + image.mime_type + "]";
            images.push_back({{"mimeType", image.mime_type}, {"data", image.data}});
        }
        calls.push_back(std::move(call));
        if (auto error = take("prompt")) return later(reply, *error);
        auto& conversation = conversations.at(id);
        if (conversation.record.at("state") == "exited")
            return later(reply, Result<acp::PromptAccepted>(make_error(ErrorCode::conflict, "session " + id + " is not running")));
        const std::string prompt_id = "p_" + std::to_string(++prompts_);
        conversation.texts[prompt_id] = text;
        if (!images.empty()) conversation.images[prompt_id] = std::move(images);
        const bool queued = conversation.running.has_value();
        Result<acp::PromptAccepted> answer(acp::PromptAccepted{prompt_id, queued});
        if (!events_before_reply) later(reply, std::move(answer));
        if (queued) {
            conversation.queued.push_back(prompt_id);
            emit(id, "prompt_queued", {{"promptId", prompt_id}, {"content", {{"type", "text"}, {"text", text}}}});
        } else {
            start_prompt(id, prompt_id);
        }
        if (events_before_reply) later(reply, std::move(answer));
    }
    void withdraw(const std::string& id, const std::string& prompt_id, acp::Reply<void> reply) override {
        calls.push_back("DELETE /prompts " + id + " " + prompt_id);
        auto& queued = conversations.at(id).queued;
        auto found = std::find(queued.begin(), queued.end(), prompt_id);
        if (found == queued.end())
            return later(reply, Result<void>(make_error(ErrorCode::conflict, "prompt " + prompt_id + " has started")));
        queued.erase(found);
        later(reply, Result<void>());
        emit(id, "prompt_withdrawn", {{"promptId", prompt_id}});
    }
    void cancel(const std::string& id, acp::Reply<void> reply) override {
        calls.push_back("POST /cancel " + id);
        if (!conversations.at(id).running)
            return later(reply, Result<void>(make_error(ErrorCode::conflict, "no turn runs in " + id)));
        later(reply, Result<void>());
    }
    void resume(const std::string& id, acp::Reply<boost::json::object> reply) override {
        calls.push_back("POST /resume " + id);
        if (auto error = take("resume")) return later(reply, *error);
        auto& conversation = conversations.at(id);
        conversation.record["state"] = "starting";
        later(reply, Result<boost::json::object>(conversation.record));
    }
    void configure(const std::string& id, const std::string& name, const std::string& value,
                   acp::Reply<std::string> reply) override {
        calls.push_back("POST /config " + id + " " + name + "=" + value);
        if (auto error = take("configure")) return later(reply, *error);
        later(reply, Result<std::string>(std::string(name == "model" ? "on_resume" : "now")));
    }
    void answer(const std::string& id, const std::string& tool_call_id, const std::string& option_id,
                acp::Reply<void> reply) override {
        calls.push_back("POST /answers " + id + " " + tool_call_id + " " + option_id);
        if (auto error = take("answer")) return later(reply, *error);
        later(reply, Result<void>());
        emit(id, "permission_answer", {{"toolCallId", tool_call_id}, {"optionId", option_id}, {"kind", "allow_once"}});
    }
    std::unique_ptr<acp::Subscription> subscribe(const std::string& id, std::int64_t after,
                                                 acp::EventSink& sink) override {
        calls.push_back("SUBSCRIBE " + id + " after " + std::to_string(after));
        auto subscription = std::make_unique<Handle>(*this, id, sink);
        subscribers_[id].push_back(subscription.get());
        for (const auto& event : conversations.at(id).events)
            if (event.seq > after)
                queue_.push_back([this, id, raw = subscription.get(), event] {
                    if (alive(id, raw)) raw->sink->event(event);
                });
        if (conversations.at(id).record.at("state") == "exited")
            queue_.push_back([this, id, raw = subscription.get()] {
                if (alive(id, raw)) raw->sink->ended("exited with code 0");
            });
        return subscription;
    }

private:
    struct Handle final : acp::Subscription {
        Handle(FakeConversations& owner, std::string session, acp::EventSink& events)
            : fake(owner), id(std::move(session)), sink(&events) {}
        ~Handle() override {
            auto& list = fake.subscribers_[id];
            list.erase(std::remove(list.begin(), list.end(), this), list.end());
        }
        FakeConversations& fake;
        std::string id;
        acp::EventSink* sink;
    };

    bool alive(const std::string& id, Handle* subscriber) {
        const auto& list = subscribers_[id];
        return std::find(list.begin(), list.end(), subscriber) != list.end();
    }
    std::optional<Error> take(const std::string& call) {
        auto found = fail_next.find(call);
        if (found == fail_next.end()) return std::nullopt;
        Error error = found->second;
        fail_next.erase(found);
        return error;
    }
    template <class T>
    void later(acp::Reply<T> reply, Result<T> result) {
        queue_.push_back([reply = std::move(reply), result = std::move(result)]() mutable { reply(std::move(result)); });
    }
    template <class T>
    void later(acp::Reply<T> reply, const Error& error) {
        later(std::move(reply), Result<T>(error));
    }
    void start_prompt(const std::string& id, const std::string& prompt_id) {
        auto& conversation = conversations.at(id);
        conversation.running = prompt_id;
        conversation.record["state"] = "running";
        boost::json::object payload{{"promptId", prompt_id},
                                    {"content", {{"type", "text"}, {"text", conversation.texts[prompt_id]}}}};
        if (auto images = conversation.images.find(prompt_id); images != conversation.images.end())
            payload["images"] = images->second;
        emit(id, "user_prompt", std::move(payload));
    }
    void start_next(const std::string& id) {
        auto& conversation = conversations.at(id);
        if (conversation.queued.empty()) return;
        const std::string next = conversation.queued.front();
        conversation.queued.pop_front();
        start_prompt(id, next);
    }

    std::deque<std::function<void()>> queue_;
    std::map<std::string, std::vector<Handle*>> subscribers_;
    int prompts_ = 0;
};

} // namespace handler::testing
