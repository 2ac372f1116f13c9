#include "acp/agent.hpp"

#include "secrets/account_kinds.hpp"

#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace handler::acp {
namespace json = boost::json;

namespace {

// How many finished turns a view remembers, for a prompt whose turn ended before
// handlerd's answer to the POST reached us.
constexpr std::size_t kRememberedOutcomes = 64;

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

std::string text_of(const json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
}

std::int64_t integer_of(const json::object& object, std::string_view key) {
    const auto* value = object.if_contains(key);
    return value != nullptr && value->is_int64() ? value->as_int64() : 0;
}

// A port error as the editor gets it: handlerd unreachable or failing is an internal
// error; a refusal is the code the caller says (usually invalid params).
rpc::Failure failure_of(const Error& error, int refusal_code = rpc::kInvalidParams) {
    if (error.code == ErrorCode::unavailable || error.code == ErrorCode::internal)
        return {rpc::kInternalError, error.message, nullptr};
    return {refusal_code, error.message, nullptr};
}

std::string names_of(const json::array& records) {
    std::string out;
    for (const auto& record : records)
        if (record.is_object()) out += (out.empty() ? "" : ", ") + text_of(record.as_object(), "name");
    return out;
}

const json::object* by_id(const json::array& records, std::int64_t id) {
    for (const auto& record : records)
        if (record.is_object() && integer_of(record.as_object(), "id") == id) return &record.as_object();
    return nullptr;
}

const json::object* by_field(const json::array& records, std::string_view key, std::string_view value) {
    for (const auto& record : records)
        if (record.is_object() && text_of(record.as_object(), key) == value) return &record.as_object();
    return nullptr;
}

// ACP's McpServer entries split into those handlerd is asked to run with the conversation
// (stdio, inside the container; http, through the session's proxy) and those it cannot
// take, each with why.
struct McpServers {
    json::array passed;
    std::vector<std::pair<std::string, std::string>> refused; // name, why
};

McpServers split_mcp_servers(const json::array* servers) {
    McpServers out;
    if (servers == nullptr) return out;
    for (std::size_t index = 0; index < servers->size(); ++index) {
        const auto* server = (*servers)[index].if_object();
        std::string name = server != nullptr ? text_of(*server, "name") : std::string();
        if (name.empty()) name = "#" + std::to_string(index + 1);
        if (server == nullptr) {
            out.refused.emplace_back(name, "it is not an object");
            continue;
        }
        const std::string type = text_of(*server, "type");
        if (type == "sse") {
            out.refused.emplace_back(name, "SSE servers are deprecated in ACP and not supported; use its HTTP endpoint");
        } else if (type == "http") {
            if (text_of(*server, "url").empty()) out.refused.emplace_back(name, "it has no url");
            else out.passed.push_back(*server);
        } else if (type.empty() || type == "stdio") {
            if (text_of(*server, "command").empty()) out.refused.emplace_back(name, "it has no command");
            else out.passed.push_back(*server);
        } else {
            out.refused.emplace_back(name, "its type '" + type + "' is not one ACP defines");
        }
    }
    return out;
}

// What the harnesses that hold conversations take, all together: initialize comes before
// any session, so before its harness is known. A prompt or server the session's own
// harness cannot take is then refused by handlerd, saying so.
struct Offered {
    bool images = false;
    bool mcp_http = false;
};

Offered offered_by(const json::array& plugins) {
    Offered offered;
    for (const auto& plugin : plugins) {
        const json::object* record = plugin.if_object();
        const json::value* description = record != nullptr ? record->if_contains("harness") : nullptr;
        if (description == nullptr || !description->is_object()) continue;
        const auto has = [&](std::string_view key, std::string_view value) {
            const json::value* list = description->as_object().if_contains(key);
            if (list == nullptr || !list->is_array()) return false;
            return std::any_of(list->as_array().begin(), list->as_array().end(),
                               [&](const json::value& item) { return item.is_string() && item.as_string() == value; });
        };
        if (!has("launch_modes", "conversation")) continue;
        offered.images = offered.images || has("prompt_content", "image");
        offered.mcp_http = offered.mcp_http || has("mcp", "http");
    }
    return offered;
}

json::object initialize_result(const std::string& version, Offered offered) {
    return json::object{
        {"protocolVersion", 1},
        {"agentCapabilities",
         json::object{{"loadSession", true},
                      {"promptCapabilities",
                       json::object{{"image", offered.images}, {"audio", false}, {"embeddedContext", true}}},
                      {"mcpCapabilities", json::object{{"http", offered.mcp_http}, {"sse", false}}},
                      {"sessionCapabilities", json::object{{"list", json::object{}},
                                                           {"resume", json::object{}},
                                                           {"close", json::object{}}}}}},
        {"agentInfo", json::object{{"name", "handler"}, {"title", "Handler"}, {"version", version}}},
        {"authMethods",
         json::array{json::object{
             {"id", "handler-account"},
             {"name", "Add an account to Handler"},
             {"description",
              "Handler keeps the agents' accounts: in a terminal, `handler account add NAME --kind KIND "
              "--api-key-stdin` (the key on stdin), then `handler agent edit AGENT --account NAME`."}}}}};
}

constexpr const char* kAccountHelp =
    "add one in a terminal with `handler account add NAME --kind KIND --api-key-stdin` (the key on stdin), "
    "then `handler agent edit AGENT --account NAME`";

} // namespace

// One of this editor's session/prompt requests, until it is answered.
struct Agent::PendingPrompt {
    std::uint64_t key = 0;
    rpc::Id request_id;
    std::string prompt_id; // empty until handlerd accepted the prompt
    bool started = false;  // its user_prompt arrived: its turn runs
    bool cancel_requested = false;
};

// A permission question of the harness, open until someone answers it.
struct OpenPermission {
    json::object payload;
    std::optional<std::int64_t> asked; // our request to the editor, while it waits
    bool editor_answered = false;
};

// A conversation this editor has open.
struct Agent::View final : EventSink {
    View(Agent& owner, std::uint64_t view_serial, std::string session_id)
        : agent(owner), serial(view_serial), id(std::move(session_id)) {}

    void event(ConversationEvent event) override { agent.on_event(*this, std::move(event)); }
    void ended(std::string reason) override { agent.on_ended(*this, reason); }

    enum class Shown { hidden = 1, replay, live };

    Agent& agent;
    const std::uint64_t serial;
    const std::string id;
    std::string cwd;
    std::int64_t project_id = 0;
    HarnessChoices harness;
    Settings settings;
    Shown shown = Shown::hidden;
    std::int64_t last_seq = 0;
    bool container_ended = false;
    bool resuming = false;
    std::vector<std::function<void()>> after_resume;
    std::vector<std::function<void(Error)>> resume_failed;
    std::unique_ptr<Subscription> subscription;
    MessageRun run;
    std::optional<std::string> running; // the running turn's prompt id
    std::vector<PendingPrompt> prompts;
    // While one of this editor's prompts is being posted, events wait here, so that its
    // user_prompt and result are known to be ours when they are read.
    int posting = 0;
    std::vector<ConversationEvent> held;
    std::optional<std::string> held_end;
    std::map<std::string, std::string> outcomes; // prompt id → stop reason
    std::deque<std::string> outcome_order;
    std::set<std::string> terminals; // execute tool calls shown as terminals (show_as_terminal)
    std::map<std::string, OpenPermission> permissions;
    std::optional<json::object> commands, usage, title;
    // A new conversation's first events (an error naming an MCP server it cannot run, say)
    // come before the editor may be sent updates: kept for after the answer.
    bool keep_early = false;
    std::vector<json::object> early;
    std::vector<std::pair<std::string, std::string>> mcp_refused;

    PendingPrompt* pending(std::uint64_t key) {
        auto found = std::find_if(prompts.begin(), prompts.end(), [key](const PendingPrompt& p) { return p.key == key; });
        return found == prompts.end() ? nullptr : &*found;
    }
    PendingPrompt* pending_by_prompt(const std::string& prompt_id) {
        auto found = std::find_if(prompts.begin(), prompts.end(),
                                  [&](const PendingPrompt& p) { return !p.prompt_id.empty() && p.prompt_id == prompt_id; });
        return found == prompts.end() ? nullptr : &*found;
    }
};

struct Agent::NewSession {
    rpc::Id id;
    std::string cwd;
    McpServers mcp;
    json::object project;
    json::object agent;
    HarnessChoices harness;
};

Agent::Agent(Conversations& handlerd, AgentOptions options, Write write)
    : handlerd_(handlerd), options_(std::move(options)), write_(std::move(write)),
      handlers_{{"initialize", &Agent::initialize},
                {"authenticate", &Agent::authenticate},
                {"session/new", &Agent::new_session},
                {"session/load", &Agent::load_session},
                {"session/resume", &Agent::resume_session},
                {"session/close", &Agent::close_session},
                {"session/list", &Agent::list_sessions},
                {"session/prompt", &Agent::prompt},
                {"session/set_config_option", &Agent::set_config_option},
                {"session/set_mode", &Agent::set_mode}} {}

Agent::~Agent() { shut_down(); }

// ---- JSON-RPC in and out --------------------------------------------------------------

void Agent::receive(std::string_view line) {
    auto message = rpc::parse(line);
    std::visit(Overloaded{[this](rpc::Request& request) { on_request(std::move(request)); },
                          [this](rpc::Notification& notification) { on_notification(notification); },
                          [this](rpc::Response& response) { on_response(response); },
                          [this](rpc::Invalid& invalid) { send(rpc::error_message(invalid.id, invalid.error)); }},
               message);
}

void Agent::receive_oversized(std::size_t limit_bytes) {
    send(rpc::error_message(nullptr, {rpc::kInvalidRequest,
                                      "a message longer than " + std::to_string(limit_bytes) +
                                          " bytes was dropped unread (handler acp's limit per line)",
                                      nullptr}));
}

void Agent::on_request(rpc::Request request) {
    const std::string key = json::serialize(request.id);
    if (!in_flight_.insert(key).second)
        return send(rpc::error_message(request.id, {rpc::kInvalidRequest,
                                                    "request id " + key + " is already in use by a request not answered yet",
                                                    nullptr}));
    const auto handler = handlers_.find(request.method);
    if (handler == handlers_.end())
        return fail(request.id, {rpc::kMethodNotFound, "handler acp has no method '" + request.method + "'", nullptr});
    if (!initialized_ && request.method != "initialize")
        return fail(request.id, {rpc::kInvalidRequest, "call initialize first", nullptr});
    try {
        const rpc::ParamReader params(request.params);
        (this->*handler->second)(request.id, params);
    } catch (const rpc::InvalidParams& error) {
        fail(request.id, {rpc::kInvalidParams, error.what(), nullptr});
    }
}

void Agent::on_notification(const rpc::Notification& notification) {
    // Notifications get no answer, not even an error (JSON-RPC 2.0), so a wrong one is
    // only logged.
    try {
        const rpc::ParamReader params(notification.params);
        if (notification.method == "session/cancel") return cancel(params);
        if (notification.method == "$/cancel_request") return cancel_request(params);
        spdlog::debug("acp: ignored notification '{}'", notification.method);
    } catch (const rpc::InvalidParams& error) {
        spdlog::warn("acp: {} ignored: {}", notification.method, error.what());
    }
}

void Agent::on_response(const rpc::Response& response) {
    if (!outgoing_.settle(response))
        spdlog::debug("acp: ignored an answer to request {} (withdrawn, or never asked)", json::serialize(response.id));
}

void Agent::respond(const rpc::Id& id, json::value result) {
    if (in_flight_.erase(json::serialize(id)) == 0) return;
    send(rpc::result_message(id, std::move(result)));
}

void Agent::fail(const rpc::Id& id, rpc::Failure failure) {
    if (in_flight_.erase(json::serialize(id)) == 0) return;
    send(rpc::error_message(id, failure));
}

void Agent::send(std::string line) {
    if (write_) write_(std::move(line));
}

void Agent::update(const View& view, json::object update) {
    send(rpc::notification_message("session/update", session_notification(view.id, std::move(update))));
}

void Agent::notice(const View& view, std::string text) {
    update(view, json::object{{"sessionUpdate", "agent_message_chunk"},
                              {"content", json::object{{"type", "text"}, {"text", std::move(text)}}}});
}

// ---- initialize, authenticate --------------------------------------------------------

void Agent::initialize(const rpc::Id& id, const rpc::ParamReader& params) {
    (void)params.integer("protocolVersion");
    // Whatever the client can do with files and terminals is never used: the agent's
    // work happens in its container, and these act on the host. Only Zed's display
    // extension is read: terminal_output shows output that already happened there.
    if (const auto* capabilities = params.optional_object("clientCapabilities"))
        if (const auto* meta = capabilities->if_contains("_meta"); meta != nullptr && meta->is_object())
            if (const auto* shown = meta->as_object().if_contains("terminal_output"))
                terminal_output_ = shown->is_bool() && shown->as_bool();
    initialized_ = true;
    // Without handlerd's plugins nothing beyond the baseline is offered; every session
    // needs handlerd anyway, and says so when it is asked for.
    handlerd_.plugins([this, id](Result<json::array> plugins) {
        respond(id, initialize_result(options_.version, plugins ? offered_by(*plugins) : Offered{}));
    });
}

void Agent::authenticate(const rpc::Id& id, const rpc::ParamReader& params) {
    const std::string method = params.string("methodId");
    if (method != "handler-account")
        return fail(id, {rpc::kInvalidParams, "unknown methodId '" + method + "'; handler acp offers handler-account",
                         nullptr});
    fail(id, {rpc::kAuthRequired,
              std::string("handler acp cannot take a key here: ") + kAccountHelp + "; then start a new thread",
              nullptr});
}

// ---- session/new ------------------------------------------------------------------------

void Agent::new_session(const rpc::Id& id, const rpc::ParamReader& params) {
    auto request = std::make_shared<NewSession>();
    request->id = id;
    request->cwd = params.string("cwd");
    if (!path_within(request->cwd, "/"))
        throw rpc::InvalidParams("params.cwd must be an absolute path, not '" + request->cwd + "'");
    request->mcp = split_mcp_servers(params.optional_array("mcpServers"));
    handlerd_.find_project(request->cwd, [this, request](Result<std::optional<json::object>> found) {
        if (!found) return fail(request->id, failure_of(found.error()));
        if (!*found)
            return fail(request->id,
                        {rpc::kInvalidParams,
                         "no registered project contains " + request->cwd + "; register it with `handler project add " +
                             request->cwd + "` (or open a folder inside a registered project)",
                         json::object{{"cwd", request->cwd}}});
        request->project = std::move(**found);
        choose_agent(request);
    });
}

void Agent::choose_agent(std::shared_ptr<NewSession> request) {
    handlerd_.agents(integer_of(request->project, "id"), [this, request](Result<json::array> agents) {
        if (!agents) return fail(request->id, failure_of(agents.error()));
        const std::string project = text_of(request->project, "name");
        const json::object* chosen = nullptr;
        if (!options_.agent_name.empty()) {
            chosen = by_field(*agents, "name", options_.agent_name);
            if (chosen == nullptr)
                return fail(request->id,
                            {rpc::kInvalidParams,
                             "no agent named '" + options_.agent_name + "' in project '" + project + "'" +
                                 (agents->empty() ? std::string(" (it has none)") : "; its agents: " + names_of(*agents)),
                             nullptr});
        } else if (agents->size() == 1 && agents->front().is_object()) {
            chosen = &agents->front().as_object();
        } else if (agents->empty()) {
            return fail(request->id, {rpc::kInvalidParams,
                                      "project '" + project + "' has no agent; add one with `handler agent add NAME "
                                      "--harness HARNESS --account ACCOUNT` (`handler plugins list` shows the harnesses)",
                                      nullptr});
        } else {
            return fail(request->id, {rpc::kInvalidParams,
                                      "project '" + project + "' has several agents (" + names_of(*agents) +
                                          "); start handler acp with --agent NAME (in the editor's settings: "
                                          "\"args\": [\"acp\", \"--agent\", \"NAME\"])",
                                      nullptr});
        }
        request->agent = *chosen;
        handlerd_.plugins([this, request](Result<json::array> plugins) {
            if (!plugins) return fail(request->id, failure_of(plugins.error()));
            const std::string harness = text_of(request->agent, "harness");
            const json::object* plugin = by_field(*plugins, "id", harness);
            const json::value* description = plugin != nullptr ? plugin->if_contains("harness") : nullptr;
            request->harness = read_harness_choices(
                harness, description != nullptr && description->is_object() ? description->as_object() : json::object{});
            check_account(request);
        });
    });
}

void Agent::check_account(std::shared_ptr<NewSession> request) {
    const std::string agent = text_of(request->agent, "name");
    const std::string account = text_of(request->agent, "account");
    if (account.empty()) {
        if (request->harness.credentials.empty()) return start_conversation(request, true);
        return fail(request->id, {rpc::kAuthRequired,
                                  "agent '" + agent + "' has no account to run " + request->harness.harness + " on; " +
                                      kAccountHelp,
                                  nullptr});
    }
    handlerd_.accounts([this, request, agent, account](Result<json::array> accounts) {
        if (!accounts) return fail(request->id, failure_of(accounts.error()));
        const json::object* record = by_field(*accounts, "name", account);
        if (record != nullptr) {
            const auto* kind = secrets::find_account_kind(text_of(*record, "kind"));
            const auto* has_secret = record->if_contains("has_secret");
            if (kind != nullptr && kind->holds == secrets::Holds::key && has_secret != nullptr &&
                has_secret->is_bool() && !has_secret->as_bool())
                return fail(request->id, {rpc::kAuthRequired,
                                          "account '" + account + "' of agent '" + agent +
                                              "' has no key yet; give it one with `handler account set-key " + account +
                                              "` (the key on stdin)",
                                          nullptr});
        }
        start_conversation(request, true);
    });
}

void Agent::start_conversation(std::shared_ptr<NewSession> request, bool with_mcp) {
    const auto& modes = request->harness.launch_modes;
    if (!modes.empty() && std::find(modes.begin(), modes.end(), "conversation") == modes.end())
        return fail(request->id, {rpc::kInvalidParams,
                                  "agent '" + text_of(request->agent, "name") + "' runs " + request->harness.harness +
                                      ", which does not hold conversations (\"conversation\" is not among its launch modes)",
                                  nullptr});
    json::object body{{"directory", request->cwd}, {"name", text_of(request->agent, "name")}, {"conversation", true}};
    if (with_mcp && !request->mcp.passed.empty()) body["mcp_servers"] = request->mcp.passed;
    handlerd_.start(std::move(body), [this, request, with_mcp](Result<json::object> session) {
        if (!session) {
            // A handlerd that does not know the field refuses it by name: start without the
            // servers, and say so in the conversation.
            if (with_mcp && !request->mcp.passed.empty() && session.error().code == ErrorCode::invalid_argument &&
                session.error().message.find("mcp_servers") != std::string::npos) {
                for (const auto& server : request->mcp.passed)
                    request->mcp.refused.emplace_back(text_of(server.as_object(), "name"),
                                                      "this handlerd does not pass MCP servers to conversations");
                return start_conversation(request, false);
            }
            return fail(request->id, failure_of(session.error()));
        }
        auto view = std::make_shared<View>(*this, next_serial_++, text_of(*session, "id"));
        if (view->id.empty())
            return fail(request->id, {rpc::kInternalError, "handlerd answered a session without an id", nullptr});
        view->cwd = request->cwd;
        view->project_id = integer_of(request->project, "id");
        view->harness = std::move(request->harness);
        const std::string network = text_of(*session, "network_mode");
        view->settings.start_mode = start_mode_of(network.empty() ? text_of(request->agent, "network_mode") : network);
        view->settings.model = text_of(*session, "model");
        view->settings.thought_level = text_of(*session, "thinking");
        view->mcp_refused = std::move(request->mcp.refused);
        view->keep_early = true;
        views_[view->id] = view;
        const rpc::Id id = request->id;
        attach(view, false, [this, id, serial = view->serial, session_id = view->id] {
            if (View* live = find_view(session_id, serial)) respond(id, session_result(*live));
        });
    });
}

json::object Agent::session_result(const View& view) const {
    json::object result{{"sessionId", view.id},
                        {"configOptions", config_options(view.harness, view.settings)},
                        {"modes", legacy_modes(view.harness, view.settings)}};
    return result;
}

// ---- session/load, session/resume -----------------------------------------------------

void Agent::load_session(const rpc::Id& id, const rpc::ParamReader& params) { open_existing(id, params, true); }

void Agent::resume_session(const rpc::Id& id, const rpc::ParamReader& params) { open_existing(id, params, false); }

void Agent::open_existing(const rpc::Id& id, const rpc::ParamReader& params, bool replay) {
    const std::string session_id = params.string("sessionId");
    const std::string cwd = params.string("cwd");
    if (!path_within(cwd, "/")) throw rpc::InvalidParams("params.cwd must be an absolute path, not '" + cwd + "'");
    (void)params.optional_array("mcpServers");
    handlerd_.session(session_id, [this, id, session_id, cwd, replay](Result<json::object> session) {
        if (!session) {
            if (session.error().code == ErrorCode::not_found)
                return fail(id, {rpc::kResourceNotFound,
                                 "handlerd has no session '" + session_id + "' (`handler session list` shows them)",
                                 json::object{{"sessionId", session_id}}});
            return fail(id, failure_of(session.error()));
        }
        if (text_of(*session, "mode") != "conversation")
            return fail(id, {rpc::kResourceNotFound,
                             "session '" + session_id + "' is not a conversation (it was started as " +
                                 text_of(*session, "mode") + ")",
                             json::object{{"sessionId", session_id}}});
        auto view = std::make_shared<View>(*this, next_serial_++, session_id);
        view->project_id = integer_of(*session, "project");
        view->settings.model = text_of(*session, "model");
        view->settings.thought_level = text_of(*session, "thinking");
        const std::string network = text_of(*session, "network_mode");
        const std::string state = text_of(*session, "state");
        const std::string harness = text_of(*session, "harness");
        const std::int64_t agent_id = integer_of(*session, "agent");
        handlerd_.projects([this, id, view, cwd, replay, network, state, harness, agent_id](Result<json::array> projects) {
            if (!projects) return fail(id, failure_of(projects.error()));
            const json::object* project = by_id(*projects, view->project_id);
            const std::string path = project != nullptr ? text_of(*project, "path") : std::string();
            if (path.empty() || !path_within(cwd, path))
                return fail(id, {rpc::kInvalidParams,
                                 "params.cwd " + cwd + " is not in the project of session " + view->id +
                                     (path.empty() ? std::string() : " (" + path + ")"),
                                 nullptr});
            view->cwd = cwd;
            view->harness.harness = harness;
            view->settings.start_mode = network.empty() ? std::string() : start_mode_of(network);
            describe(view, agent_id,
                     [this, id, view, replay, state] {
                         if (View* open = find_view(view->id)) detach(*open, Detach::reopen);
                         views_[view->id] = view;
                         auto answer = [this, id, serial = view->serial, session_id = view->id] {
                             View* live = find_view(session_id, serial);
                             if (live == nullptr) return;
                             json::object result = session_result(*live);
                             result.erase("sessionId");
                             respond(id, std::move(result));
                         };
                         const bool stopped = state != "running" && state != "starting";
                         if (replay || !stopped) return attach(view, replay, answer);
                         // session/resume of an ended conversation continues it in a new
                         // container first.
                         view->container_ended = true;
                         resume_then(*view, [this, view, answer] { attach(view, false, answer); },
                                     [this, id](Error error) { fail(id, failure_of(error)); });
                     },
                     [this, id](Error error) { fail(id, failure_of(error)); });
        });
    });
}

void Agent::describe(std::shared_ptr<View> view, std::int64_t agent_id, std::function<void()> done,
                     std::function<void(Error)> failed) {
    handlerd_.plugins([this, view, agent_id, done, failed](Result<json::array> plugins) {
        if (!plugins) return failed(plugins.error());
        const json::object* plugin = by_field(*plugins, "id", view->harness.harness);
        const json::value* description = plugin != nullptr ? plugin->if_contains("harness") : nullptr;
        view->harness = read_harness_choices(
            view->harness.harness, description != nullptr && description->is_object() ? description->as_object() : json::object{});
        if (!view->settings.start_mode.empty() || agent_id == 0) {
            if (view->settings.start_mode.empty()) view->settings.start_mode = "filtered";
            return done();
        }
        // The session runs with its agent's network mode: read it there.
        handlerd_.agents(view->project_id, [view, agent_id, done](Result<json::array> agents) {
            const json::object* agent = agents ? by_id(*agents, agent_id) : nullptr;
            view->settings.start_mode = start_mode_of(agent != nullptr ? text_of(*agent, "network_mode") : std::string());
            done();
        });
    });
}

void Agent::attach(std::shared_ptr<View> view, bool replay, std::function<void()> ready) {
    handlerd_.history(view->id, view->last_seq,
                      [this, serial = view->serial, session_id = view->id, replay, ready](
                          Result<std::vector<ConversationEvent>> events) {
        View* target = find_view(session_id, serial);
        if (target == nullptr) return;
        if (!events) {
            // The history could not be read: the editor is answered anyway and the
            // subscription, from the start, brings the events.
            spdlog::warn("acp: the events of {} could not be read: {}", session_id, events.error().message);
        } else {
            target->shown = replay ? View::Shown::replay : View::Shown::hidden;
            for (const auto& event : *events) process(*target, event);
        }
        ready();
        if ((target = find_view(session_id, serial)) != nullptr) go_live(*target);
    });
}

// Zed drops session/updates that arrive before the answer to session/new (ACP.md §3.2), so
// what a client shows beside the thread is sent only now, after it.
void Agent::go_live(View& view) {
    view.shown = View::Shown::live;
    for (const auto& [name, why] : view.mcp_refused)
        notice(view, "MCP server '" + name + "' is not available in this conversation: " + why + "\n");
    view.mcp_refused.clear();
    for (auto& early : std::exchange(view.early, {})) update(view, std::move(early));
    view.keep_early = false;
    if (view.commands) update(view, *view.commands);
    if (view.usage) update(view, *view.usage);
    if (view.title) update(view, *view.title);
    for (auto& [tool_call_id, open] : view.permissions) ask_permission(view, tool_call_id);
    view.subscription = handlerd_.subscribe(view.id, view.last_seq, view);
}

// ---- session/close, session/list ------------------------------------------------------

void Agent::close_session(const rpc::Id& id, const rpc::ParamReader& params) {
    const std::string session_id = params.string("sessionId");
    if (View* view = find_view(session_id)) detach(*view, Detach::close);
    respond(id, json::object{});
}

// Lets go of a conversation without stopping it. A close also withdraws (queued) or
// interrupts (running) this editor's own prompts, as ACP's close cancels the work it
// asked for; opening the session again answers them but leaves the work going, and so
// does the editor going away (like a crash would).
void Agent::detach(View& view, Detach how) {
    for (auto& pending : view.prompts) {
        if (how == Detach::close && !pending.prompt_id.empty()) {
            const std::string session_id = view.id;
            if (pending.started) handlerd_.cancel(session_id, [](Result<void>) {});
            else handlerd_.withdraw(session_id, pending.prompt_id, [](Result<void>) {});
        }
        if (how != Detach::shutdown) respond(pending.request_id, json::object{{"stopReason", "cancelled"}});
    }
    view.prompts.clear();
    for (auto& [tool_call_id, open] : view.permissions)
        if (open.asked)
            if (auto line = outgoing_.withdraw(*open.asked)) send(std::move(*line));
    const std::string session_id = view.id;
    auto owned = views_.find(session_id);
    if (owned == views_.end()) return;
    owned->second->subscription.reset();
    views_.erase(owned);
}

void Agent::list_sessions(const rpc::Id& id, const rpc::ParamReader& params) {
    const auto cwd = params.optional_string("cwd");
    if (cwd && !path_within(*cwd, "/")) throw rpc::InvalidParams("params.cwd must be an absolute path, not '" + *cwd + "'");
    (void)params.optional_string("cursor"); // every conversation comes in one page
    handlerd_.sessions([this, id, cwd](Result<json::array> sessions) {
        if (!sessions) return fail(id, failure_of(sessions.error()));
        handlerd_.projects([this, id, cwd, sessions = std::move(*sessions)](Result<json::array> projects) {
            if (!projects) return fail(id, failure_of(projects.error()));
            auto answer = [this, id, sessions, projects = std::move(*projects)](std::optional<std::int64_t> only) {
                std::vector<const json::object*> chosen;
                for (const auto& entry : sessions) {
                    const auto* session = entry.if_object();
                    if (session == nullptr || text_of(*session, "mode") != "conversation") continue;
                    if (only && integer_of(*session, "project") != *only) continue;
                    chosen.push_back(session);
                }
                std::stable_sort(chosen.begin(), chosen.end(), [](const json::object* a, const json::object* b) {
                    return integer_of(*a, "updated_at") > integer_of(*b, "updated_at");
                });
                json::array out;
                for (const auto* session : chosen) {
                    const json::object* project = by_id(projects, integer_of(*session, "project"));
                    std::string where = text_of(*session, "directory");
                    if (where.empty() && project != nullptr) where = text_of(*project, "path");
                    if (where.empty()) continue;
                    json::object info{{"sessionId", text_of(*session, "id")}, {"cwd", where}};
                    if (const auto* title = session->if_contains("title"); title && title->is_string())
                        info["title"] = title->as_string();
                    if (const auto updated = integer_of(*session, "updated_at"); updated > 0)
                        info["updatedAt"] = iso8601(updated);
                    out.push_back(std::move(info));
                }
                respond(id, json::object{{"sessions", std::move(out)}});
            };
            if (!cwd) return answer(std::nullopt);
            handlerd_.find_project(*cwd, [this, id, answer](Result<std::optional<json::object>> found) {
                if (!found) return fail(id, failure_of(found.error()));
                if (!*found) return respond(id, json::object{{"sessions", json::array{}}});
                answer(integer_of(**found, "id"));
            });
        });
    });
}

// ---- session/prompt, session/cancel ---------------------------------------------------

void Agent::prompt(const rpc::Id& id, const rpc::ParamReader& params) {
    const std::string session_id = params.string("sessionId");
    const auto& blocks = params.array("prompt");
    auto text = prompt_content(blocks, options_.prompt_limit_bytes);
    if (!text) return fail(id, {rpc::kInvalidParams, text.error().message, nullptr});
    View* view = find_view(session_id);
    if (view == nullptr)
        return fail(id, {rpc::kResourceNotFound,
                         "no open session '" + session_id + "' (open it with session/new, session/load or session/resume)",
                         json::object{{"sessionId", session_id}}});
    const std::uint64_t key = next_prompt_key_++;
    view->prompts.push_back(PendingPrompt{key, id, {}, false, false});
    send_prompt(*view, key, std::move(*text), false);
}

void Agent::send_prompt(View& view, std::uint64_t key, api::Prompt text, bool retried) {
    if (view.container_ended) {
        auto again = [this, session_id = view.id, serial = view.serial, key, text, retried] {
            if (View* live = find_view(session_id, serial)) send_prompt(*live, key, text, retried);
        };
        auto failed = [this, session_id = view.id, serial = view.serial, key](Error error) {
            if (View* live = find_view(session_id, serial)) fail_prompt(*live, key, failure_of(error, rpc::kInternalError));
        };
        return resume_then(view, again, failed);
    }
    ++view.posting;
    handlerd_.prompt(view.id, text, [this, session_id = view.id, serial = view.serial, key, text,
                                     retried](Result<PromptAccepted> accepted) {
        View* target = find_view(session_id, serial);
        if (target == nullptr) return;
        --target->posting;
        PendingPrompt* pending = target->pending(key);
        if (!accepted) {
            // 409: handlerd says it does not run, before its end reached us. Resume it once.
            if (accepted.error().code == ErrorCode::conflict && !retried && pending != nullptr) {
                target->container_ended = true;
                send_prompt(*target, key, text, true);
            } else {
                fail_prompt(*target, key, failure_of(accepted.error(), rpc::kInvalidParams));
            }
        } else if (pending != nullptr) {
            pending->prompt_id = accepted->prompt_id;
            if (auto outcome = target->outcomes.find(accepted->prompt_id); outcome != target->outcomes.end())
                finish_prompt(*target, key, outcome->second);
            else if (pending->cancel_requested)
                cancel_prompt(*target, *pending);
        }
        if ((target = find_view(session_id, serial)) == nullptr || target->posting > 0) return;
        auto held = std::move(target->held);
        target->held.clear();
        auto held_end = std::move(target->held_end);
        target->held_end.reset();
        for (auto& event : held) {
            if ((target = find_view(session_id, serial)) == nullptr) return;
            process(*target, event);
        }
        if (held_end && (target = find_view(session_id, serial)) != nullptr) on_ended(*target, *held_end);
    });
}

// Resumes an ended conversation (one POST for all who wait), subscribes again, then runs
// `next`.
void Agent::resume_then(View& view, std::function<void()> next, std::function<void(Error)> failed) {
    view.after_resume.push_back(std::move(next));
    view.resume_failed.push_back(std::move(failed));
    if (view.resuming) return;
    view.resuming = true;
    handlerd_.resume(view.id, [this, session_id = view.id, serial = view.serial](Result<json::object> resumed) {
        View* target = find_view(session_id, serial);
        if (target == nullptr) return;
        target->resuming = false;
        auto waiting = std::move(target->after_resume);
        auto failing = std::move(target->resume_failed);
        target->after_resume.clear();
        target->resume_failed.clear();
        // 409: it runs already (another client resumed it first), which is what was wanted.
        if (!resumed && resumed.error().code != ErrorCode::conflict) {
            for (auto& callback : failing) callback(resumed.error());
            return;
        }
        target->container_ended = false;
        target->settings.on_resume.clear();
        if (target->shown == View::Shown::live)
            target->subscription = handlerd_.subscribe(target->id, target->last_seq, *target);
        for (auto& callback : waiting) callback();
    });
}

void Agent::cancel(const rpc::ParamReader& params) {
    View* view = find_view(params.string("sessionId"));
    if (view == nullptr) return;
    std::vector<std::uint64_t> keys;
    for (const auto& pending : view->prompts) keys.push_back(pending.key);
    for (auto key : keys)
        if (PendingPrompt* pending = view->pending(key)) cancel_prompt(*view, *pending);
}

void Agent::cancel_request(const rpc::ParamReader& params) {
    const auto* request_id = params.find("requestId");
    if (request_id == nullptr) throw rpc::InvalidParams("params.requestId is required");
    for (auto& [session_id, view] : views_)
        for (auto& pending : view->prompts)
            if (pending.request_id == *request_id) return cancel_prompt(*view, pending);
    // Any other request of the editor still running: answered as cancelled now, and its
    // late result dropped.
    fail(*request_id, {rpc::kRequestCancelled, "cancelled by the editor", nullptr});
}

// Withdraws this editor's prompt when it waits, interrupts its turn when it runs. The
// prompt is answered "cancelled" either way (never an error), when its turn's result or
// its withdrawal is seen.
void Agent::cancel_prompt(View& view, PendingPrompt& pending) {
    pending.cancel_requested = true;
    if (pending.prompt_id.empty()) return; // once handlerd accepted it (send_prompt)
    const std::string session_id = view.id;
    const std::uint64_t serial = view.serial, key = pending.key;
    if (pending.started) {
        handlerd_.cancel(session_id, [session_id](Result<void> done) {
            // 409: no turn runs any more; its result is on its way.
            if (!done && done.error().code != ErrorCode::conflict)
                spdlog::warn("acp: cancelling the turn of {} failed: {}", session_id, done.error().message);
        });
        return;
    }
    handlerd_.withdraw(session_id, pending.prompt_id, [this, session_id, serial, key](Result<void> done) {
        View* target = find_view(session_id, serial);
        if (target == nullptr) return;
        if (done) return finish_prompt(*target, key, "cancelled");
        // 409: it started meanwhile, so its turn is interrupted instead.
        if (done.error().code == ErrorCode::conflict)
            handlerd_.cancel(session_id, [](Result<void>) {});
    });
}

void Agent::finish_prompt(View& view, std::uint64_t key, std::string stop_reason) {
    PendingPrompt* pending = view.pending(key);
    if (pending == nullptr) return;
    const rpc::Id id = pending->request_id;
    if (pending->cancel_requested) stop_reason = "cancelled";
    view.prompts.erase(view.prompts.begin() + (pending - view.prompts.data()));
    respond(id, json::object{{"stopReason", std::move(stop_reason)}});
}

void Agent::fail_prompt(View& view, std::uint64_t key, rpc::Failure failure) {
    PendingPrompt* pending = view.pending(key);
    if (pending == nullptr) return;
    const rpc::Id id = pending->request_id;
    const bool cancelled = pending->cancel_requested;
    view.prompts.erase(view.prompts.begin() + (pending - view.prompts.data()));
    if (cancelled) return respond(id, json::object{{"stopReason", "cancelled"}});
    fail(id, std::move(failure));
}

// ---- config options -------------------------------------------------------------------

void Agent::set_config_option(const rpc::Id& id, const rpc::ParamReader& params) {
    const std::string session_id = params.string("sessionId");
    const std::string config_id = params.string("configId");
    const auto* value = params.find("value");
    if (value == nullptr) throw rpc::InvalidParams("params.value is required");
    if (!value->is_string())
        throw rpc::InvalidParams("params.value must be a string: every config option of handler acp is a select");
    View* view = find_view(session_id);
    if (view == nullptr)
        return fail(id, {rpc::kResourceNotFound, "no open session '" + session_id + "'", json::object{{"sessionId", session_id}}});
    change_setting(id, *view, config_id, std::string(value->as_string()), true);
}

void Agent::set_mode(const rpc::Id& id, const rpc::ParamReader& params) {
    const std::string session_id = params.string("sessionId");
    const std::string mode = params.string("modeId");
    View* view = find_view(session_id);
    if (view == nullptr)
        return fail(id, {rpc::kResourceNotFound, "no open session '" + session_id + "'", json::object{{"sessionId", session_id}}});
    change_setting(id, *view, "mode", mode, false);
}

void Agent::change_setting(const rpc::Id& id, View& view, const std::string& config_id, const std::string& value,
                           bool answer_options) {
    auto answer = [this, id, answer_options](const View& target) {
        if (answer_options) respond(id, json::object{{"configOptions", config_options(target.harness, target.settings)}});
        else respond(id, json::object{});
    };
    auto change = change_for(view.harness, config_id, value);
    if (!change) return fail(id, {rpc::kInvalidParams, change.error().message, nullptr});
    // The start mode is the session's network mode, taken when it starts; only its own
    // is a choice here.
    if (config_id == "mode" && is_start_mode(value)) {
        if (value != view.settings.start_mode)
            return fail(id, {rpc::kInvalidParams,
                             "the start mode (Locked down, Guarded, Open) is the session's network mode, chosen when "
                             "it starts; for the agent's next conversations: `handler agent edit AGENT --network " +
                                 value + "`",
                             nullptr});
        apply_change(view.settings, "mode", value, false);
        return answer(view);
    }
    handlerd_.configure(view.id, change->setting, change->value,
                        [this, id, session_id = view.id, serial = view.serial, config_id, value,
                         answer](Result<std::string> applied) {
        View* target = find_view(session_id, serial);
        if (target == nullptr) return fail(id, {rpc::kResourceNotFound, "session '" + session_id + "' was closed", nullptr});
        if (!applied) return fail(id, failure_of(applied.error()));
        apply_change(target->settings, config_id, value, *applied == "on_resume");
        answer(*target);
    });
}

// ---- events ---------------------------------------------------------------------------

void Agent::on_event(View& view, ConversationEvent event) {
    if (view.posting > 0) {
        view.held.push_back(std::move(event));
        return;
    }
    process(view, event);
}

void Agent::on_ended(View& view, const std::string& reason) {
    if (view.posting > 0) {
        view.held_end = reason; // after the held events
        return;
    }
    view.container_ended = true;
    for (auto& [tool_call_id, open] : view.permissions)
        if (open.asked)
            if (auto line = outgoing_.withdraw(*open.asked)) send(std::move(*line));
    view.permissions.clear();
    view.running.reset();
    // A turn cut short ends cancelled (handlerd records that result itself, so this is
    // for one whose result never came); a prompt that never ran will not run in this
    // container, and the next prompt resumes the conversation.
    std::vector<std::pair<std::uint64_t, bool>> keys;
    for (const auto& pending : view.prompts)
        if (!pending.prompt_id.empty()) keys.emplace_back(pending.key, pending.started);
    for (auto [key, started] : keys) {
        if (started) finish_prompt(view, key, "cancelled");
        else
            fail_prompt(view, key, {rpc::kInternalError,
                                    "the conversation ended (" + reason +
                                        ") before this prompt ran; send it again to resume the conversation",
                                    nullptr});
    }
}

void Agent::record_outcome(View& view, const std::string& prompt_id, const std::string& stop_reason) {
    if (prompt_id.empty()) return;
    if (view.outcomes.emplace(prompt_id, stop_reason).second) view.outcome_order.push_back(prompt_id);
    while (view.outcome_order.size() > kRememberedOutcomes) {
        view.outcomes.erase(view.outcome_order.front());
        view.outcome_order.pop_front();
    }
}

void Agent::process(View& view, const ConversationEvent& event) {
    if (event.seq <= view.last_seq) return; // seen already (a reconnect's overlap)
    view.last_seq = event.seq;
    const bool shown = view.shown != View::Shown::hidden;
    const bool live = view.shown == View::Shown::live;
    const auto& payload = event.payload;
    auto translated = to_update(event, view.run);

    if (event.kind == "user_prompt") {
        const std::string prompt_id = text_of(payload, "promptId");
        view.running = prompt_id;
        PendingPrompt* mine = view.pending_by_prompt(prompt_id);
        if (mine != nullptr) mine->started = true;
        // The editor shows its own prompt already; another client's is shown as the user's.
        if (shown && (mine == nullptr || view.shown == View::Shown::replay)) {
            // A prompt of images alone has no text to show.
            const bool only_images = translated && payload.contains("images") &&
                                     text_of(translated->at("content").as_object(), "text").empty();
            if (translated && !only_images) update(view, std::move(*translated));
            for (auto& image : prompt_image_updates(payload)) update(view, std::move(image));
        }
        return;
    }
    if (event.kind == "prompt_withdrawn") {
        const std::string prompt_id = text_of(payload, "promptId");
        record_outcome(view, prompt_id, "cancelled");
        if (PendingPrompt* mine = view.pending_by_prompt(prompt_id)) finish_prompt(view, mine->key, "cancelled");
        return;
    }
    if (event.kind == "result") {
        const std::string stop = stop_reason(payload);
        const std::string prompt_id = view.running.value_or(std::string());
        view.running.reset();
        record_outcome(view, prompt_id, stop);
        // The turn is over: its questions are moot.
        std::vector<std::string> open;
        for (const auto& [tool_call_id, question] : view.permissions) open.push_back(tool_call_id);
        for (const auto& tool_call_id : open) withdraw_permission(view, tool_call_id);
        if (PendingPrompt* mine = view.pending_by_prompt(prompt_id)) finish_prompt(view, mine->key, stop);
        return;
    }
    if (event.kind == "permission_request") {
        const std::string tool_call_id = text_of(payload, "toolCallId");
        if (tool_call_id.empty()) return;
        view.permissions[tool_call_id] = OpenPermission{payload, std::nullopt, false};
        if (live) ask_permission(view, tool_call_id);
        return;
    }
    if (event.kind == "permission_answer") return withdraw_permission(view, text_of(payload, "toolCallId"));
    if (event.kind == "mode_changed") return mode_changed(view, payload);
    if (!translated) return;
    if (terminal_output_) show_as_terminal(*translated, view.terminals);
    if (event.kind == "available_commands") view.commands = *translated;
    else if (event.kind == "usage") view.usage = *translated;
    else if (event.kind == "session_info") view.title = *translated;
    const bool remembered = event.kind == "available_commands" || event.kind == "usage" || event.kind == "session_info";
    if (live || (view.shown == View::Shown::replay && !remembered)) update(view, std::move(*translated));
    else if (view.keep_early && !remembered) view.early.push_back(std::move(*translated));
}

void Agent::mode_changed(View& view, const json::object& payload) {
    Settings before = view.settings;
    if (auto mode = text_of(payload, "modeId"); !mode.empty()) view.settings.mode = mode;
    if (auto model = text_of(payload, "model"); !model.empty()) view.settings.model = model;
    if (auto level = text_of(payload, "thinkingLevel"); !level.empty()) view.settings.thought_level = level;
    if (view.shown != View::Shown::live) return;
    if (before.mode != view.settings.mode)
        update(view, json::object{{"sessionUpdate", "current_mode_update"}, {"currentModeId", view.settings.mode}});
    if (before.mode != view.settings.mode || before.model != view.settings.model ||
        before.thought_level != view.settings.thought_level)
        update(view, json::object{{"sessionUpdate", "config_option_update"},
                                  {"configOptions", config_options(view.harness, view.settings)}});
}

void Agent::ask_permission(View& view, const std::string& tool_call_id) {
    auto found = view.permissions.find(tool_call_id);
    if (found == view.permissions.end() || found->second.asked || found->second.editor_answered) return;
    auto params = permission_params(view.id, found->second.payload);
    if (!params) return;
    std::int64_t request_id = 0;
    auto line = outgoing_.start(
        rpc::ClientMethod::request_permission, std::move(*params),
        [this, session_id = view.id, serial = view.serial, tool_call_id](const rpc::Response& answer) {
            View* target = find_view(session_id, serial);
            if (target == nullptr) return;
            auto open = target->permissions.find(tool_call_id);
            if (open == target->permissions.end()) return;
            open->second.asked.reset();
            open->second.editor_answered = true;
            if (answer.error) {
                spdlog::warn("acp: the editor answered the permission request for {} with an error: {}", tool_call_id,
                             answer.error->message);
                return;
            }
            const auto* result = answer.result ? answer.result->if_object() : nullptr;
            const auto* outcome_value = result != nullptr ? result->if_contains("outcome") : nullptr;
            const auto* outcome = outcome_value != nullptr ? outcome_value->if_object() : nullptr;
            if (outcome == nullptr || text_of(*outcome, "outcome") != "selected") return; // cancelled: others may answer
            const std::string option = text_of(*outcome, "optionId");
            if (option.empty()) return;
            handlerd_.answer(session_id, tool_call_id, option, [tool_call_id](Result<void> done) {
                // 404: another client answered first, which is fine.
                if (!done && done.error().code != ErrorCode::not_found)
                    spdlog::warn("acp: passing the answer for {} on failed: {}", tool_call_id, done.error().message);
            });
        },
        request_id);
    found->second.asked = request_id;
    send(std::move(line));
}

void Agent::withdraw_permission(View& view, const std::string& tool_call_id) {
    auto found = view.permissions.find(tool_call_id);
    if (found == view.permissions.end()) return;
    if (found->second.asked)
        if (auto line = outgoing_.withdraw(*found->second.asked)) send(std::move(*line));
    view.permissions.erase(found);
}

// ---- the rest -------------------------------------------------------------------------

Agent::View* Agent::find_view(const std::string& id, std::uint64_t serial) {
    View* view = find_view(id);
    return view != nullptr && view->serial == serial ? view : nullptr;
}

Agent::View* Agent::find_view(const std::string& id) {
    auto found = views_.find(id);
    return found == views_.end() ? nullptr : found->second.get();
}

void Agent::shut_down() {
    if (closing_) return;
    closing_ = true;
    while (!views_.empty()) detach(*views_.begin()->second, Detach::shutdown);
}

} // namespace handler::acp
