#include "acp/handlerd_port.hpp"

#include "api/client.hpp"

// GCC 12 at -O2 reports -Wnull-dereference inside Asio's own headers (see api/client.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#pragma GCC diagnostic pop

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace handler::acp {
namespace {

namespace json = boost::json;
namespace net = boost::asio;

// Pages of GET .../events.
constexpr int kEventsPage = 1000;
// Between attempts to reach handlerd again after the events stream dropped.
constexpr std::chrono::milliseconds kFirstRetry{250};
constexpr std::chrono::milliseconds kLongestRetry{5000};
// The WebSocket's close code when handlerd stops (its sessions go on).
constexpr std::uint16_t kGoingAway = 1001;

std::string encoded(std::string_view text) { return boost::urls::encode(text, boost::urls::unreserved_chars); }

std::string session_path(const std::string& id) { return "/api/v1/sessions/" + encoded(id); }

ErrorCode code_of(unsigned status) {
    switch (status) {
    case 400: return ErrorCode::invalid_argument;
    case 401: return ErrorCode::unauthorized;
    case 403: return ErrorCode::forbidden;
    case 404: return ErrorCode::not_found;
    case 409: return ErrorCode::conflict;
    case 413: return ErrorCode::too_large;
    case 422: return ErrorCode::incompatible;
    case 503: return ErrorCode::unavailable;
    default: return ErrorCode::internal;
    }
}

// handlerd's answer as JSON (null for 204), or its error in its own words.
Result<json::value> read_answer(const std::string& what, Result<api::Response> response) {
    if (!response) return response.take_error();
    if (response->status == 204) return json::value(nullptr);
    boost::system::error_code parse_error;
    json::value body = json::parse(response->body, parse_error);
    if (response->status >= 400) {
        std::string message = "handlerd answered " + std::to_string(response->status) + " to " + what;
        if (!parse_error && body.is_object())
            if (const auto* error = body.as_object().if_contains("error"); error && error->is_object())
                if (const auto* text = error->as_object().if_contains("message"); text && text->is_string())
                    message = std::string(text->as_string());
        return make_error(code_of(response->status), message);
    }
    if (parse_error)
        return make_error(ErrorCode::internal, "handlerd answered " + what + " with something that is not JSON (" +
                                                   parse_error.message() + ")");
    return body;
}

Error unexpected(const std::string& what) {
    return make_error(ErrorCode::internal, "handlerd's answer to " + what + " has an unexpected shape");
}

Result<json::object> as_object(Result<json::value> value, const std::string& what) {
    if (!value) return value.take_error();
    if (!value->is_object()) return unexpected(what);
    return std::move(value->as_object());
}

Result<json::array> array_in(Result<json::value> value, std::string_view key, const std::string& what) {
    if (!value) return value.take_error();
    const auto* list = value->is_object() ? value->as_object().if_contains(key) : nullptr;
    if (list == nullptr || !list->is_array()) return unexpected(what);
    return list->as_array();
}

Result<void> as_void(Result<json::value> value) {
    if (!value) return value.take_error();
    return {};
}

// One conversation's live events: the WebSocket, opened again after it drops.
class LiveEvents final : public Subscription {
public:
    LiveEvents(net::io_context& io, std::filesystem::path socket, std::string id, std::int64_t after, EventSink& sink)
        : io_(io), socket_(std::move(socket)), id_(std::move(id)), last_seq_(after), sink_(sink), timer_(io) {
        connect();
    }
    ~LiveEvents() override {
        *alive_ = false;
        timer_.cancel();
    }

private:
    std::string target() const {
        if (legacy_) return session_path(id_) + "/terminal?events=1&read_only=1";
        return session_path(id_) + "/terminal?events=1&output=0&read_only=1&after=" + std::to_string(last_seq_);
    }

    void connect() {
        ended_.reset();
        api::client::MessageHooks hooks;
        hooks.message = [this, alive = alive_](std::string_view text) {
            if (*alive) on_message(text);
        };
        hooks.closed = [this, alive = alive_](Result<api::client::CloseReason> how) {
            if (*alive) on_closed(std::move(how));
        };
        stream_ = api::client::open_message_stream(io_, socket_, target(), std::move(hooks));
    }

    // Nothing of this object is touched after the sink's call: the sink may end the
    // subscription from inside it.
    void on_message(std::string_view text) {
        boost::system::error_code error;
        json::value value = json::parse(text, error);
        const auto* message = error ? nullptr : value.if_object();
        const auto* type = message != nullptr ? message->if_contains("type") : nullptr;
        if (type == nullptr || !type->is_string()) return;
        if (*type == "attached") {
            retry_ = kFirstRetry;
            const auto* state = message->if_contains("state");
            starting_ = state != nullptr && state->is_string() && state->as_string() == "starting";
        } else if (*type == "event") {
            auto event = read_event(*message);
            if (!event || event->seq <= last_seq_) return; // the overlap of a reconnect
            last_seq_ = event->seq;
            sink_.event(std::move(*event));
        } else if (*type == "exit") {
            const auto* code = message->if_contains("code");
            ended_ = "its program exited with code " +
                     (code != nullptr && code->is_int64() ? std::to_string(code->as_int64()) : std::string("?"));
        } else if (*type == "ended" || *type == "error") {
            const auto* reason = message->if_contains(*type == "ended" ? "reason" : "message");
            ended_ = reason != nullptr && reason->is_string() ? std::string(reason->as_string()) : std::string("it ended");
        }
    }

    void on_closed(Result<api::client::CloseReason> how) {
        stream_.reset();
        // A session that was still starting (just resumed, its container on its way) has
        // not ended: it is attached again in a moment.
        if (how && how->code != kGoingAway && ended_ && !starting_) return sink_.ended(*ended_);
        if (!how) {
            const auto& error = how.error();
            // A handlerd from before conversations takes neither `after` nor `output`: read
            // everything then (the seqs drop what was seen).
            if (error.code == ErrorCode::invalid_argument && !legacy_) {
                legacy_ = true;
                return connect();
            }
            if (error.code == ErrorCode::not_found || error.code == ErrorCode::invalid_argument ||
                error.code == ErrorCode::forbidden)
                return sink_.ended(error.message);
            spdlog::warn("acp: the events of {} stopped ({}); reconnecting", id_, error.message);
        }
        // handlerd went away (stopped, restarted, killed): come back after the last seq.
        timer_.expires_after(retry_);
        retry_ = std::min(retry_ * 2, kLongestRetry);
        timer_.async_wait([this, alive = alive_](const boost::system::error_code& error) {
            if (!error && *alive) connect();
        });
    }

    net::io_context& io_;
    const std::filesystem::path socket_;
    const std::string id_;
    std::int64_t last_seq_;
    EventSink& sink_;
    net::steady_timer timer_;
    std::unique_ptr<api::client::MessageStream> stream_;
    std::optional<std::string> ended_;
    std::chrono::milliseconds retry_ = kFirstRetry;
    bool legacy_ = false;
    bool starting_ = false;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

class HandlerdPort final : public Conversations {
public:
    HandlerdPort(net::io_context& io, std::filesystem::path socket, unsigned timeout_ms)
        : io_(io), socket_(std::move(socket)), timeout_ms_(timeout_ms) {}
    ~HandlerdPort() override { *alive_ = false; }

    void find_project(const std::string& path, Reply<std::optional<json::object>> reply) override {
        const std::string what = "GET /api/v1/projects?path=";
        call("GET", "/api/v1/projects?path=" + encoded(path), {}, [reply, what](Result<json::value> answer) {
            auto projects = array_in(std::move(answer), "projects", what);
            if (!projects) return reply(projects.take_error());
            if (projects->empty()) return reply(std::optional<json::object>());
            if (!projects->front().is_object()) return reply(unexpected(what));
            reply(std::optional<json::object>(projects->front().as_object()));
        });
    }
    void projects(Reply<json::array> reply) override { list("/api/v1/projects", "projects", std::move(reply)); }
    void agents(std::int64_t project_id, Reply<json::array> reply) override {
        list("/api/v1/agents?project=" + std::to_string(project_id), "agents", std::move(reply));
    }
    void accounts(Reply<json::array> reply) override { list("/api/v1/accounts", "accounts", std::move(reply)); }
    void plugins(Reply<json::array> reply) override { list("/api/v1/plugins", "plugins", std::move(reply)); }
    void sessions(Reply<json::array> reply) override { list("/api/v1/sessions", "sessions", std::move(reply)); }
    void session(const std::string& id, Reply<json::object> reply) override {
        record("GET", session_path(id), {}, std::move(reply));
    }
    void start(json::object body, Reply<json::object> reply) override {
        record("POST", "/api/v1/sessions", json::value(std::move(body)), std::move(reply));
    }
    void history(const std::string& id, std::int64_t after_seq, Reply<std::vector<ConversationEvent>> reply) override {
        auto gathered = std::make_shared<std::vector<ConversationEvent>>();
        page(id, after_seq, gathered, std::move(reply));
    }
    void prompt(const std::string& id, const api::Prompt& prompt, Reply<PromptAccepted> reply) override {
        const std::string what = "POST " + session_path(id) + "/prompts";
        json::object body{{"text", prompt.text}};
        if (!prompt.images.empty()) {
            json::array images;
            for (const auto& image : prompt.images)
                images.push_back(json::object{{"mimeType", image.mime_type}, {"data", image.data}});
            body["images"] = std::move(images);
        }
        call("POST", session_path(id) + "/prompts", std::move(body), [reply, what](Result<json::value> answer) {
            auto object = as_object(std::move(answer), what);
            if (!object) return reply(object.take_error());
            const auto* prompt_id = object->if_contains("promptId");
            const auto* queued = object->if_contains("queued");
            if (prompt_id == nullptr || !prompt_id->is_string()) return reply(unexpected(what));
            reply(PromptAccepted{std::string(prompt_id->as_string()), queued != nullptr && queued->is_bool() && queued->as_bool()});
        });
    }
    void withdraw(const std::string& id, const std::string& prompt_id, Reply<void> reply) override {
        call("DELETE", session_path(id) + "/prompts/" + encoded(prompt_id), {},
             [reply](Result<json::value> answer) { reply(as_void(std::move(answer))); });
    }
    void cancel(const std::string& id, Reply<void> reply) override {
        call("POST", session_path(id) + "/cancel", {}, [reply](Result<json::value> answer) { reply(as_void(std::move(answer))); });
    }
    void resume(const std::string& id, Reply<json::object> reply) override {
        record("POST", session_path(id) + "/resume", {}, std::move(reply));
    }
    void configure(const std::string& id, const std::string& name, const std::string& value,
                   Reply<std::string> reply) override {
        const std::string what = "POST " + session_path(id) + "/config";
        call("POST", session_path(id) + "/config", json::object{{"name", name}, {"value", value}},
             [reply, what](Result<json::value> answer) {
                 auto object = as_object(std::move(answer), what);
                 if (!object) return reply(object.take_error());
                 const auto* applied = object->if_contains("applied");
                 reply(std::string(applied != nullptr && applied->is_string() ? applied->as_string() : "now"));
             });
    }
    void answer(const std::string& id, const std::string& tool_call_id, const std::string& option_id,
                Reply<void> reply) override {
        call("POST", session_path(id) + "/answers", json::object{{"toolCallId", tool_call_id}, {"optionId", option_id}},
             [reply](Result<json::value> answer) { reply(as_void(std::move(answer))); });
    }
    std::unique_ptr<Subscription> subscribe(const std::string& id, std::int64_t after_seq, EventSink& sink) override {
        return std::make_unique<LiveEvents>(io_, socket_, id, after_seq, sink);
    }

private:
    void call(const std::string& method, const std::string& target, std::optional<json::value> body,
              std::function<void(Result<json::value>)> done) {
        const std::string what = method + " " + target;
        api::client::request_async(io_, socket_, method, target, body ? json::serialize(*body) : std::string(),
                                   timeout_ms_, [alive = alive_, what, done = std::move(done)](Result<api::Response> response) {
                                       if (*alive) done(read_answer(what, std::move(response)));
                                   });
    }
    void list(const std::string& target, std::string key, Reply<json::array> reply) {
        call("GET", target, {}, [reply, key, what = "GET " + target](Result<json::value> answer) {
            reply(array_in(std::move(answer), key, what));
        });
    }
    void record(const std::string& method, const std::string& target, std::optional<json::value> body,
                Reply<json::object> reply) {
        call(method, target, std::move(body), [reply, what = method + " " + target](Result<json::value> answer) {
            reply(as_object(std::move(answer), what));
        });
    }
    void page(const std::string& id, std::int64_t after, std::shared_ptr<std::vector<ConversationEvent>> gathered,
              Reply<std::vector<ConversationEvent>> reply) {
        const std::string target =
            session_path(id) + "/events?after=" + std::to_string(after) + "&limit=" + std::to_string(kEventsPage);
        call("GET", target, {}, [this, id, gathered, reply, target](Result<json::value> answer) {
            auto events = array_in(std::move(answer), "events", "GET " + target);
            if (!events) return reply(events.take_error());
            std::int64_t last = 0;
            for (const auto& entry : *events)
                if (const auto* object = entry.if_object())
                    if (auto event = read_event(*object)) {
                        last = event->seq;
                        gathered->push_back(std::move(*event));
                    }
            if (static_cast<int>(events->size()) < kEventsPage || last == 0) return reply(std::move(*gathered));
            page(id, last, gathered, reply);
        });
    }

    net::io_context& io_;
    const std::filesystem::path socket_;
    const unsigned timeout_ms_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} // namespace

std::unique_ptr<Conversations> make_handlerd_port(net::io_context& io, std::filesystem::path socket, unsigned timeout_ms) {
    return std::make_unique<HandlerdPort>(io, std::move(socket), timeout_ms);
}

} // namespace handler::acp
