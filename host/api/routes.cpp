#include "api/routes.hpp"
#include "api/routes_call.hpp"

#include "secrets/account_kinds.hpp"
#include "secrets/secret_store.hpp"

#include "api/event_follow.hpp"
#include "api/prompt_images.hpp"
#include "api/routes_call.hpp"
#include "api/routes_changes.hpp"
#include "api/routes_json.hpp"
#include "api/ui_assets.hpp"
#include "api/ui_login.hpp"
#include "store/store.hpp"
#include "store/validation.hpp"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>
#include <initializer_list>
#include <map>
#include <optional>

namespace handler::api {
namespace fs = std::filesystem;
namespace json = boost::json;


namespace {

Response no_route(const std::string& method, const std::string& target) {
    return error_response(ErrorCode::not_found,
                          "there is no route " + method + " " + target + " (see docs/api.md)");
}

std::string join(std::initializer_list<std::string_view> items, std::string_view separator) {
    std::string out;
    for (const auto item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

// A positive decimal id; anything else cannot name a record, so it is "not found".
std::optional<std::int64_t> parse_id(std::string_view text) {
    std::int64_t id = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || id <= 0)
        return std::nullopt;
    return id;
}

Response created(const json::object& body, const std::string& location) {
    Response response = json_response(201, body);
    response.headers["Location"] = location;
    return response;
}

Response no_content() {
    Response response;
    response.status = 204;
    return response;
}

// Resolves what the user typed the way the store keeps it: symlinks resolved, no
// trailing '/'. weakly_canonical so that a path that does not exist (yet) still works.
std::string canonical_for_lookup(const std::string& path) {
    std::error_code error;
    fs::path resolved = fs::weakly_canonical(path, error);
    if (error) resolved = fs::path(path).lexically_normal();
    std::string text = resolved.string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    return text;
}

} // namespace

Routes::Routes(store::Store& store, EventHub& events, const Clock& clock, DaemonInfo info)
    : store_(store), events_(events), clock_(clock), info_(std::move(info)) {
    if (!info_.home_dir.empty()) info_.home_dir = canonical_for_lookup(info_.home_dir.string());
}

Response Routes::handle(const Request& request) {
    try {
        auto url = boost::urls::parse_origin_form(request.target);
        if (!url)
            return error_response(ErrorCode::invalid_argument,
                                  "the request target '" + request.target +
                                      "' is not a valid path and query");
        Call call;
        call.method = request.method;
        call.target = std::string(url->encoded_path());
        call.body = request.body;
        call.over_tcp = request.over_tcp;
        call.session_cookie = request.session_cookie;
        // The page's files: a fixed set of names, looked up whole (api/ui_assets.hpp).
        if (!call.target.starts_with("/api/")) {
            static const UiAssets kNoPage;
            return serve_ui_asset(info_.ui_assets != nullptr ? *info_.ui_assets : kNoPage, request,
                                  call.target, info_.ui_missing);
        }
        std::vector<std::string> segments;
        for (const auto segment : url->segments()) segments.emplace_back(segment);
        const bool versioned = segments.size() >= 3 && segments[0] == "api" && segments[1] == "v1";
        const bool has_empty = std::any_of(segments.begin(), segments.end(),
                                           [](const std::string& s) { return s.empty(); });
        if (!versioned || has_empty) return no_route(call.method, call.target);
        call.segments.assign(segments.begin() + 2, segments.end());
        for (const auto param : url->params())
            call.query.emplace_back(std::string(param.key), std::string(param.value));
        return dispatch(call);
    } catch (const std::exception& error) {
        return error_response(ErrorCode::internal, "internal error while handling " +
                                                       request.method + " " + request.target +
                                                       ": " + error.what());
    } catch (...) {
        return error_response(ErrorCode::internal, "internal error while handling " +
                                                       request.method + " " + request.target);
    }
}

namespace {

Response not_allowed(const std::string& method, const std::string& target,
                     std::initializer_list<std::string_view> allowed) {
    Response response = error_response(ErrorCode::invalid_argument,
                                       method + " is not allowed on " + target + "; use " +
                                           join(allowed, " or "));
    response.status = 405;
    response.headers["Allow"] = join(allowed, ", ");
    return response;
}

// The query parameters a route takes; anything else is refused so that a typo
// (?projet=3) does not silently list everything.
Result<std::map<std::string, std::string>> query_params(
    const std::vector<std::pair<std::string, std::string>>& query,
    std::initializer_list<std::string_view> allowed) {
    std::map<std::string, std::string> params;
    for (const auto& [key, value] : query) {
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
            return make_error(ErrorCode::invalid_argument,
                              "unknown query parameter '" + key + "'" +
                                  (allowed.size() ? "; this route takes " + join(allowed, ", ")
                                                  : "; this route takes none"));
        if (!params.emplace(key, value).second)
            return make_error(ErrorCode::invalid_argument,
                              "query parameter '" + key + "' is given twice");
    }
    return params;
}

// A query parameter that is a whole number when given: `after`, `before`, `limit`, `tail`.
Result<std::optional<std::int64_t>> whole_number_param(const std::map<std::string, std::string>& params,
                                                       const std::string& key) {
    const auto found = params.find(key);
    if (found == params.end()) return std::optional<std::int64_t>();
    const std::string& text = found->second;
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0)
        return make_error(ErrorCode::invalid_argument, "query parameter '" + key + "' must be a whole number");
    return std::optional<std::int64_t>(value);
}

// A page's `limit`: 1000 when not given; clamped to 1..10000 (not refused), as it always was.
constexpr std::int64_t kMaxPageLimit = 10000;
std::int64_t page_limit(std::optional<std::int64_t> limit) {
    return std::clamp<std::int64_t>(limit.value_or(1000), 1, kMaxPageLimit);
}

// Which events GET /api/v1/sessions/{id}/events asks for (docs/api.md): those after a seq
// (the default, from the start), the `limit` just before a seq, or the last `limit`.
struct EventPage {
    enum class From { after = 1, before, end };
    From from = From::after;
    std::int64_t seq = 0;
    std::int64_t limit = 1000;
};

Result<EventPage> event_page(const std::vector<std::pair<std::string, std::string>>& query) {
    auto params = query_params(query, {"after", "before", "limit", "tail"});
    if (!params) return params.error();
    std::optional<std::int64_t> values[4];
    const char* const names[4] = {"after", "before", "limit", "tail"};
    for (int index = 0; index < 4; ++index) {
        auto value = whole_number_param(*params, names[index]);
        if (!value) return value.error();
        values[index] = *value;
    }
    const auto& [after, before, limit, tail] = values;
    if (after && before)
        return make_error(ErrorCode::invalid_argument,
                          "query parameters 'after' and 'before' do not go together: 'after' pages forward "
                          "from a seq, 'before' back from one; give one of them");
    if (tail && (after || before || limit))
        return make_error(ErrorCode::invalid_argument,
                          "query parameter 'tail' goes alone: it is the last N events; for the N before a "
                          "seq use before=SEQ&limit=N");
    if (tail) {
        if (*tail < 1 || *tail > kMaxPageLimit)
            return make_error(ErrorCode::invalid_argument, "query parameter 'tail' must be from 1 to " +
                                                               std::to_string(kMaxPageLimit) + ", not " +
                                                               std::to_string(*tail));
        return EventPage{EventPage::From::end, 0, *tail};
    }
    if (before) {
        // seq counts from 1, so nothing comes before 1: a client asking that has lost count.
        if (*before < 1)
            return make_error(ErrorCode::invalid_argument,
                              "query parameter 'before' must be a seq, 1 or more (seq counts from 1)");
        return EventPage{EventPage::From::before, *before, page_limit(limit)};
    }
    return EventPage{EventPage::From::after, after.value_or(0), page_limit(limit)};
}

template <class T, class ToJson>
json::array json_list(const std::vector<T>& items, ToJson to_json_fn) {
    json::array out;
    out.reserve(items.size());
    for (const auto& item : items) out.emplace_back(to_json_fn(item));
    return out;
}

} // namespace

Response Routes::session_events(const std::string& id, const Call& call) {
    auto page = event_page(call.query);
    if (!page) return error_response(page.error());
    auto events = page->from == EventPage::From::after
                      ? store_.session_events(id, page->seq, page->limit)
                      : store_.session_events_before(
                            id, page->from == EventPage::From::before ? page->seq : store::Store::kSessionEventsEnd,
                            page->limit);
    if (!events) return error_response(events.error());
    json::array list;
    list.reserve(events->size());
    for (const auto& event : *events) list.push_back(to_json(event));
    return json_response(200, json::object{{"events", std::move(list)}});
}

Response Routes::dispatch(const Call& call) {
    const std::string& resource = call.segments[0];
    // Only a conversation's prompt has a fourth segment (sessions/ID/prompts/PROMPT_ID).
    const bool prompt = resource == "sessions" && call.segments.size() > 2 && call.segments[2] == "prompts";
    if (call.segments.size() > (prompt ? 4u : resource == "sessions" || resource == "accounts" ? 3u : 2u))
        return no_route(call.method, call.target);
    if (resource == "status") return status(call);
    if (resource == "plugins") return plugins(call);
    if (resource == "contexts") return contexts(call);
    if (resource == "projects") return projects(call);
    if (resource == "accounts") return accounts(call);
    if (resource == "agents") return agents(call);
    if (resource == "sessions") return sessions(call);
    if (resource == "ui") return ui(call);
    if (resource == "images") return images(call);
    if (resource == "folders") return folders(call);
    if (resource == "model-servers") return model_servers(call);
    if (resource == "events" && call.segments.size() == 1) {
        if (call.method != "GET") return not_allowed(call.method, call.target, {"GET"});
        return error_response(ErrorCode::invalid_argument,
                              "GET /api/v1/events is a WebSocket: send it with an Upgrade: "
                              "websocket header");
    }
    return no_route(call.method, call.target);
}

void Routes::publish(std::string_view type, json::object data) {
    // The write is committed already: a failing subscriber must not turn it into an error.
    try {
        events_.publish(event_json(type, std::move(data), clock_.now_ms()));
    } catch (const std::exception& error) {
        spdlog::error("publishing event {} failed: {}", type, error.what());
    }
}

// ---- status and plugins -----------------------------------------------------------

Response Routes::status(const Call& call) {
    if (call.segments.size() != 1) return no_route(call.method, call.target);
    if (call.method != "GET") return not_allowed(call.method, call.target, {"GET"});
    if (auto params = query_params(call.query, {}); !params) return error_response(params.error());
    if (!info_.status)
        return error_response(ErrorCode::unavailable, "the daemon status is not available yet");
    return json_response(200, info_.status());
}

Response Routes::plugins(const Call& call) {
    if (call.segments.size() != 1) return no_route(call.method, call.target);
    if (call.method != "GET") return not_allowed(call.method, call.target, {"GET"});
    if (auto params = query_params(call.query, {}); !params) return error_response(params.error());
    std::vector<plugins::PluginRecord> records;
    if (info_.plugins) records = info_.plugins();
    return json_response(200, json::object{{"plugins", json_list(records, [](const auto& r) {
                                                return to_json(r);
                                            })}});
}

// ---- the web page's login (docs/web-ui.md, "Security") -----------------------------

Response Routes::ui(const Call& call) {
    if (call.segments.size() != 2) return no_route(call.method, call.target);
    const std::string& action = call.segments[1];
    if (action != "login-tokens" && action != "login" && action != "logout")
        return no_route(call.method, call.target);
    if (call.method != "POST") return not_allowed(call.method, call.target, {"POST"});
    if (auto params = query_params(call.query, {}); !params) return error_response(params.error());
    if (info_.ui_logins == nullptr)
        return error_response(ErrorCode::unavailable, "the web page's login is not available");
    UiLogins& logins = *info_.ui_logins;

    if (action == "login-tokens") {
        // Only the owner's own `handler ui`, by the socket's file mode: over TCP this would
        // let a holder of one credential mint another, and a page has no use for it.
        if (call.over_tcp)
            return error_response(ErrorCode::forbidden,
                                  "login links are made only over the unix socket: run `handler ui`");
        if (!call.body.empty()) {
            auto body = parse_body(call.body);
            if (!body) return error_response(body.error());
            if (auto known = BodyReader(*body).allow_only({}); !known) return error_response(known.error());
        }
        const std::uint16_t port = info_.tcp_port ? info_.tcp_port() : 0;
        if (port == 0)
            return error_response(ErrorCode::conflict,
                                  "the web page is served on handlerd's TCP port, and TCP is off: set "
                                  "[api] tcp = true in config.toml and restart handlerd");
        auto token = logins.issue_login_token();
        if (!token) return error_response(token.error());
        // 127.0.0.1 rather than localhost: no resolver, hosts file or IPv6 preference
        // decides where the browser goes with the token.
        const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/#login=" + token->token;
        return json_response(201, json::object{{"token", token->token},
                                               {"url", url},
                                               {"expires_at", token->expires_at}});
    }

    if (action == "login") {
        // The cookie is for a browser, which only ever comes over TCP.
        if (!call.over_tcp)
            return error_response(ErrorCode::invalid_argument,
                                  "POST /api/v1/ui/login is for the web page, over TCP");
        auto body = parse_body(call.body);
        if (!body) return error_response(body.error());
        BodyReader reader(*body);
        if (auto known = reader.allow_only({"token"}); !known) return error_response(known.error(), reader.failed_field());
        auto token = reader.required_string("token");
        if (!token) return error_response(token.error(), reader.failed_field());
        auto session = logins.redeem(*token);
        if (!session) return error_response(session.error());
        Response response = no_content();
        response.headers["Set-Cookie"] = session_cookie_header(*session);
        response.headers["Cache-Control"] = "no-store";
        return response;
    }

    // logout: the session the cookie names ends; the browser is told to forget it.
    logins.end_session(call.session_cookie);
    Response response = no_content();
    response.headers["Set-Cookie"] = cleared_session_cookie_header();
    return response;
}

// ---- contexts ---------------------------------------------------------------------

Response Routes::contexts(const Call& call) {
    if (call.segments.size() == 2) {
        if (call.method != "GET") return not_allowed(call.method, call.target, {"GET"});
        const auto id = parse_id(call.segments[1]);
        if (!id) return error_response(ErrorCode::not_found,
                                       "context '" + call.segments[1] + "' does not exist");
        auto context = store_.get_context(*id);
        if (!context) return error_response(context.error());
        return json_response(200, to_json(*context));
    }
    if (call.method == "GET") {
        if (auto params = query_params(call.query, {}); !params)
            return error_response(params.error());
        auto all = store_.list_contexts();
        if (!all) return error_response(all.error());
        return json_response(200, json::object{{"contexts", json_list(*all, [](const auto& c) {
                                                    return to_json(c);
                                                })}});
    }
    if (call.method != "POST") return not_allowed(call.method, call.target, {"GET", "POST"});
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"name"}); !known) return error_response(known.error(), reader.failed_field());
    auto name = reader.required_string("name");
    if (!name) return error_response(name.error(), reader.failed_field());
    auto context = store_.create_context(*name);
    // Its one field: a name that breaks the rule or exists already is about it.
    const bool about_name = !context && (context.error().code == ErrorCode::invalid_argument ||
                                         context.error().code == ErrorCode::conflict);
    if (!context) return error_response(context.error(), about_name ? "name" : "");
    auto json_context = to_json(*context);
    publish("context.created", json_context);
    return created(json_context, "/api/v1/contexts/" + std::to_string(context->id));
}

// ---- projects ---------------------------------------------------------------------

namespace {

// The project fields shared by POST and PATCH (path is POST's alone).
Result<store::ProjectChanges> read_project_fields(const BodyReader& reader) {
    store::ProjectChanges fields;
    auto name = reader.optional_string("name");
    if (!name) return name.take_error();
    fields.name = std::move(*name);
    auto context = reader.nullable_string("context");
    if (!context) return context.take_error();
    fields.context = std::move(*context);
    auto hosts = reader.optional_string_list("allowed_hosts");
    if (!hosts) return hosts.take_error();
    fields.allowed_hosts = std::move(*hosts);
    return fields;
}

} // namespace

Response Routes::projects(const Call& call) {
    if (call.segments.size() == 2) {
        if (call.method != "GET" && call.method != "PATCH" && call.method != "DELETE")
            return not_allowed(call.method, call.target, {"GET", "PATCH", "DELETE"});
        const auto id = parse_id(call.segments[1]);
        if (!id) return error_response(ErrorCode::not_found,
                                       "project '" + call.segments[1] + "' does not exist");
        if (call.method == "PATCH") return update_project(call, *id);
        if (call.method == "DELETE") {
            // The page's "New project" takes its project back when the first agent is
            // refused. The store would take agents and sessions with it, so a project that
            // has any is refused here: removing those is each one's own decision.
            auto project = store_.get_project(*id);
            if (!project) return error_response(project.error());
            store::AgentFilter mine;
            mine.project_id = *id;
            auto agents = store_.list_agents(mine);
            if (!agents) return error_response(agents.error());
            auto sessions = store_.list_sessions();
            if (!sessions) return error_response(sessions.error());
            const auto held = std::count_if(sessions->begin(), sessions->end(),
                                            [&](const store::Session& s) { return s.project_id == *id; });
            if (!agents->empty() || held > 0)
                return error_response(ErrorCode::conflict,
                                      "project '" + project->name + "' still has " + std::to_string(agents->size()) +
                                          " agents and " + std::to_string(held) +
                                          " sessions; remove them first");
            if (auto removed = store_.delete_project(*id); !removed) return error_response(removed.error());
            publish("project.deleted", to_json(*project));
            return no_content();
        }
        auto project = store_.get_project(*id);
        if (!project) return error_response(project.error());
        return json_response(200, to_json(*project));
    }
    if (call.method == "GET") return list_projects(call);
    if (call.method == "POST") return create_project(call);
    return not_allowed(call.method, call.target, {"GET", "POST"});
}

Response Routes::list_projects(const Call& call) {
    auto params = query_params(call.query, {"path"});
    if (!params) return error_response(params.error());
    std::vector<store::Project> found;
    if (auto path = params->find("path"); path != params->end()) {
        if (!path->second.starts_with("/"))
            return error_response(ErrorCode::invalid_argument,
                                  "query parameter 'path' must be an absolute path, got '" +
                                      path->second + "'");
        auto containing = store_.find_project_containing(canonical_for_lookup(path->second));
        if (!containing) return error_response(containing.error());
        if (*containing) found.push_back(std::move(**containing));
    } else {
        auto all = store_.list_projects();
        if (!all) return error_response(all.error());
        found = std::move(*all);
    }
    return json_response(200, json::object{{"projects", json_list(found, [](const auto& p) {
                                                return to_json(p);
                                            })}});
}

Result<fs::path> Routes::project_folder(const std::string& path) const {
    if (!path.starts_with("/"))
        return make_error(ErrorCode::invalid_argument,
                          "field 'path' must be an absolute path, got '" + path + "'");
    // The agent gets exactly this folder mounted, so it is stored with symlinks resolved:
    // a link must not later be pointed somewhere else behind the user's back.
    std::error_code error;
    const fs::path folder = fs::canonical(path, error);
    if (error)
        return make_error(ErrorCode::invalid_argument,
                          "the folder " + path + " cannot be used: " + error.message());
    if (!fs::is_directory(folder, error))
        return make_error(ErrorCode::invalid_argument, path + " is not a folder");
    const std::string text = folder.string();
    // `outer` is `inner` or one of its parents.
    const auto holds = [](const std::string& outer, const std::string& inner) {
        return inner == outer || inner.starts_with(outer == "/" ? outer : outer + "/");
    };
    if (!info_.home_dir.empty() && holds(text, info_.home_dir.string()))
        return make_error(ErrorCode::invalid_argument,
                          "the folder " + text + " is or contains your home folder; the "
                          "agent would see ~/.ssh and your other projects. Register the "
                          "project's own folder instead");
    for (const auto& dir : info_.handler_dirs) {
        const std::string own = canonical_for_lookup(dir.string());
        if (own.empty() || (!holds(text, own) && !holds(own, text))) continue;
        return make_error(ErrorCode::invalid_argument,
                          "the folder " + text + (text == own ? " is " : holds(own, text) ? " is inside " : " holds ") +
                              "Handler's own folder " + own +
                              " (its keys, database and sockets); an agent must never see it. "
                              "Register a folder outside it");
    }
    return folder;
}

Response Routes::create_project(const Call& call) {
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"path", "name", "context", "allowed_hosts"}); !known)
        return error_response(known.error(), reader.failed_field());
    auto path = reader.required_string("path");
    if (!path) return error_response(path.error(), reader.failed_field());
    auto fields = read_project_fields(reader);
    if (!fields) return error_response(fields.error(), reader.failed_field());

    auto checked = project_folder(*path);
    if (!checked) return error_response(checked.error(), "path");
    const fs::path& folder = *checked;

    store::NewProject project{fields->name.value_or(folder.filename().string()), folder.string(),
                              fields->context.value_or(std::nullopt),
                              fields->allowed_hosts.value_or(std::vector<std::string>{})};
    std::string field; // the one a refusal concerns
    auto made = store_.create_project(project, &field);
    if (!made) return error_response(made.error(), field);
    auto json_project = to_json(*made);
    publish("project.created", json_project);
    return created(json_project, "/api/v1/projects/" + std::to_string(made->id));
}

Response Routes::update_project(const Call& call, std::int64_t id) {
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (reader.has("path"))
        return error_response(ErrorCode::invalid_argument, "path",
                              "field 'path' cannot be changed; register the other folder as a "
                              "project of its own instead");
    if (auto known = reader.allow_only({"name", "context", "allowed_hosts"}); !known)
        return error_response(known.error(), reader.failed_field());
    auto changes = read_project_fields(reader);
    if (!changes) return error_response(changes.error(), reader.failed_field());
    std::string field;
    auto updated = store_.update_project(id, *changes, &field);
    if (!updated) return error_response(updated.error(), field);
    auto json_project = to_json(*updated);
    // Running sessions' proxies listen for this: a new list applies to open tunnels too.
    if (!changes->empty()) publish("project.updated", json_project);
    return json_response(200, json_project);
}

// ---- accounts ---------------------------------------------------------------------

boost::json::object Routes::account_json(const store::Account& account) const {
    auto object = to_json(account);
    object["has_secret"] = info_.secrets != nullptr && info_.secrets->has(account.id);
    return object;
}

// PUT /api/v1/accounts/{id}/secret {"value": KEY} and DELETE. The value is never echoed,
// logged or returned; an account only says has_secret.
Response Routes::account_secret(const Call& call, std::int64_t id) {
    if (call.method != "PUT" && call.method != "DELETE")
        return not_allowed(call.method, call.target, {"PUT", "DELETE"});
    if (info_.secrets == nullptr)
        return error_response(ErrorCode::unavailable, "this handlerd has no secret store");
    auto account = store_.get_account(id);
    if (!account) return error_response(account.error());
    if (call.method == "DELETE") {
        if (auto removed = info_.secrets->remove(id); !removed) return error_response(removed.error());
        publish("account.updated", account_json(*account));
        return no_content();
    }
    if (secrets::provider_for(account->kind) == nullptr)
        return error_response(ErrorCode::invalid_argument,
                              "account '" + account->name + "' is of kind " + account->kind +
                                  ", which holds no key (keys are for " +
                                  secrets::account_kind_names(secrets::Holds::key) + ")");
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"value"}); !known) return error_response(known.error(), reader.failed_field());
    auto value = reader.required_string("value");
    if (!value) return error_response(value.error(), reader.failed_field());
    auto normalized = secrets::normalize_secret(*value);
    if (!normalized) return error_response(normalized.error(), "value");
    if (auto stored = info_.secrets->put(id, *normalized); !stored) return error_response(stored.error());
    publish("account.updated", account_json(*account));
    return no_content();
}

namespace {

// base_url is a string, or null where an account has none: every kind but the local
// servers', which always need one. `hint` says what leaving the field out does.
Result<std::optional<std::string>> read_base_url(const BodyReader& reader,
                                                 std::string_view kind, std::string_view hint) {
    auto base_url = reader.nullable_string("base_url");
    if (!base_url) return base_url.take_error();
    if (*base_url && !**base_url && secrets::is_local_server(kind))
        return make_error(ErrorCode::invalid_argument,
                          "field 'base_url' cannot be null: " + std::string(kind) +
                              " accounts need their server's URL; " + std::string(hint));
    return base_url->value_or(std::nullopt);
}

} // namespace

Response Routes::accounts(const Call& call) {
    if (call.segments.size() == 3) {
        const auto id = parse_id(call.segments[1]);
        if (!id || call.segments[2] != "secret") return no_route(call.method, call.target);
        return account_secret(call, *id);
    }
    if (call.segments.size() == 2) {
        if (call.method != "GET" && call.method != "PATCH" && call.method != "DELETE")
            return not_allowed(call.method, call.target, {"GET", "PATCH", "DELETE"});
        const auto id = parse_id(call.segments[1]);
        if (!id) return error_response(ErrorCode::not_found,
                                       "account '" + call.segments[1] + "' does not exist");
        if (call.method == "PATCH") return update_account(call, *id);
        if (call.method == "DELETE") return delete_account(*id);
        auto account = store_.get_account(*id);
        if (!account) return error_response(account.error());
        return json_response(200, account_json(*account));
    }
    if (call.method == "GET") {
        if (auto params = query_params(call.query, {}); !params)
            return error_response(params.error());
        auto all = store_.list_accounts();
        if (!all) return error_response(all.error());
        return json_response(200, json::object{{"accounts", json_list(*all, [this](const auto& a) {
                                                    return account_json(a);
                                                })}});
    }
    if (call.method != "POST") return not_allowed(call.method, call.target, {"GET", "POST"});
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"name", "kind", "context", "base_url", "secret"}); !known)
        return error_response(known.error(), reader.failed_field());
    auto name = reader.required_string("name");
    if (!name) return error_response(name.error(), reader.failed_field());
    auto kind = reader.required_string("kind");
    if (!kind) return error_response(kind.error(), reader.failed_field());
    auto context = reader.nullable_string("context");
    if (!context) return error_response(context.error(), reader.failed_field());
    auto base_url = read_base_url(reader, *kind,
                                  "leave the field out for the default, " +
                                      std::string(secrets::default_base_url(*kind)));
    if (!base_url) return error_response(base_url.error(), reader.failed_field());
    // The key comes with the account, so that a bad one leaves nothing behind: it is
    // checked before anything is written, and the account goes again if the file does not.
    auto secret = reader.optional_string("secret");
    if (!secret) return error_response(secret.error(), reader.failed_field());
    if (*secret) {
        if (auto known_kind = store::check_account_kind(*kind); !known_kind) return error_response(known_kind.error(), "kind");
        if (secrets::provider_for(*kind) == nullptr)
            return error_response(ErrorCode::invalid_argument, "secret",
                                  "field 'secret': an account of kind " + *kind + " holds no key (keys are for " +
                                      secrets::account_kind_names(secrets::Holds::key) + ")");
        if (info_.secrets == nullptr)
            return error_response(ErrorCode::unavailable, "this handlerd has no secret store");
        auto normalized = secrets::normalize_secret(**secret);
        if (!normalized)
            return error_response(ErrorCode::invalid_argument, "secret", "field 'secret': " + normalized.error().message);
        **secret = std::move(*normalized);
    }
    auto account =
        store_.create_account({*name, *kind, context->value_or(std::nullopt), *base_url});
    if (!account) return error_response(account.error());
    if (*secret) {
        if (auto stored = info_.secrets->put(account->id, **secret); !stored) {
            if (auto undone = store_.delete_account(account->id); !undone)
                spdlog::error("account {} is left without its key: removing it failed: {}", account->name,
                              undone.error().message);
            return error_response(stored.error());
        }
    }
    auto json_account = account_json(*account);
    publish("account.created", json_account);
    return created(json_account, "/api/v1/accounts/" + std::to_string(account->id));
}

// The account (the store refuses while agents use it), then its key file: account ids are
// SQLite rowids, which a later account may be given again, and it must not inherit the key.
Response Routes::delete_account(std::int64_t id) {
    auto account = store_.get_account(id);
    if (!account) return error_response(account.error());
    if (auto removed = store_.delete_account(id); !removed) return error_response(removed.error());
    if (info_.secrets != nullptr) {
        if (auto gone = info_.secrets->remove(id); !gone)
            spdlog::error("account {} is removed but its key file stays: {}", account->name, gone.error().message);
    }
    publish("account.deleted", account_json(*account));
    return no_content();
}

Response Routes::update_account(const Call& call, std::int64_t id) {
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"name", "kind", "context", "base_url"}); !known)
        return error_response(known.error(), reader.failed_field());
    store::AccountChanges changes;
    auto name = reader.optional_string("name");
    if (!name) return error_response(name.error(), reader.failed_field());
    changes.name = std::move(*name);
    auto kind = reader.optional_string("kind");
    if (!kind) return error_response(kind.error(), reader.failed_field());
    changes.kind = std::move(*kind);
    auto context = reader.nullable_string("context");
    if (!context) return error_response(context.error(), reader.failed_field());
    changes.context = std::move(*context);
    // Whether null is allowed depends on the kind the account ends up with.
    auto current = store_.get_account(id);
    if (!current) return error_response(current.error());
    auto base_url = read_base_url(reader, changes.kind.value_or(current->kind),
                                  "leave the field out to keep it");
    if (!base_url) return error_response(base_url.error(), reader.failed_field());
    changes.base_url = std::move(*base_url);
    auto updated = store_.update_account(id, changes);
    if (!updated) return error_response(updated.error());
    auto json_account = account_json(*updated);
    if (!changes.empty()) publish("account.updated", json_account);
    return json_response(200, json_account);
}

// ---- agents -----------------------------------------------------------------------

namespace {

Result<std::optional<store::NetworkMode>> read_network_mode(const BodyReader& reader) {
    auto text = reader.optional_string("network_mode");
    if (!text) return text.take_error();
    if (!*text) return std::optional<store::NetworkMode>();
    auto mode = network::parse_mode(**text, network::ModeHolder::agent);
    if (!mode)
        return reader.fail("network_mode", "field 'network_mode' must be " +
                                               network::mode_list(network::ModeHolder::agent) + ", got '" + **text + "'");
    return mode;
}

// The agent fields shared by POST and PATCH.
struct AgentFields {
    std::optional<std::string> name, harness, goal, instructions;
    std::optional<std::optional<std::string>> account;
    std::optional<store::NetworkMode> network_mode;
    std::optional<std::vector<std::string>> allowed_hosts;
    std::optional<std::vector<std::string>> addons;
    std::optional<std::optional<std::string>> model, thinking; // null: the harness's default
};

Result<AgentFields> read_agent_fields(const BodyReader& reader) {
    AgentFields fields;
    for (auto [field, out] : {std::pair{"name", &fields.name}, {"harness", &fields.harness},
                              {"goal", &fields.goal}, {"instructions", &fields.instructions}}) {
        auto value = reader.optional_string(field);
        if (!value) return value.take_error();
        *out = std::move(*value);
    }
    auto account = reader.nullable_string("account");
    if (!account) return account.take_error();
    fields.account = std::move(*account);
    auto mode = read_network_mode(reader);
    if (!mode) return mode.take_error();
    fields.network_mode = *mode;
    auto hosts = reader.optional_string_list("allowed_hosts");
    if (!hosts) return hosts.take_error();
    fields.allowed_hosts = std::move(*hosts);
    auto addons = reader.optional_string_list("addons");
    if (!addons) return addons.take_error();
    fields.addons = std::move(*addons);
    auto model = reader.nullable_string("model");
    if (!model) return model.take_error();
    fields.model = std::move(*model);
    auto thinking = reader.nullable_string("thinking");
    if (!thinking) return thinking.take_error();
    fields.thinking = std::move(*thinking);
    return fields;
}

// A project named by id or by path, as the API allows everywhere.
Result<std::int64_t> resolve_project(store::Store& store,
                                     const BodyReader::ProjectRef& reference) {
    if (reference.id) {
        auto project = store.get_project(*reference.id);
        if (!project) return project.take_error();
        return project->id;
    }
    auto project = store.find_project_by_path(canonical_for_lookup(reference.path));
    if (!project) return project.take_error();
    if (!*project)
        return make_error(ErrorCode::not_found,
                          "no project is registered at " + reference.path);
    return (*project)->id;
}

} // namespace

Response Routes::agents(const Call& call) {
    if (call.segments.size() == 1) {
        if (call.method == "GET") return list_agents(call);
        if (call.method == "POST") return create_agent(call);
        return not_allowed(call.method, call.target, {"GET", "POST"});
    }
    if (call.method != "GET" && call.method != "PATCH" && call.method != "DELETE")
        return not_allowed(call.method, call.target, {"GET", "PATCH", "DELETE"});
    const auto id = parse_id(call.segments[1]);
    if (!id)
        return error_response(ErrorCode::not_found,
                              "agent '" + call.segments[1] + "' does not exist");
    if (call.method == "PATCH") return update_agent(call, *id);
    if (call.method == "DELETE") return delete_agent(*id);
    auto agent = store_.get_agent(*id);
    if (!agent) return error_response(agent.error());
    return json_response(200, to_json(*agent));
}

Response Routes::list_agents(const Call& call) {
    auto params = query_params(call.query, {"project", "name"});
    if (!params) return error_response(params.error());
    store::AgentFilter filter;
    if (auto project = params->find("project"); project != params->end()) {
        BodyReader::ProjectRef reference;
        if (auto id = parse_id(project->second)) reference.id = *id;
        else if (project->second.starts_with("/")) reference.path = project->second;
        else
            return error_response(ErrorCode::invalid_argument,
                                  "query parameter 'project' must be a project id or an "
                                  "absolute path, got '" + project->second + "'");
        auto resolved = resolve_project(store_, reference);
        if (!resolved) return error_response(resolved.error());
        filter.project_id = *resolved;
    }
    if (auto name = params->find("name"); name != params->end()) filter.name = name->second;
    auto found = store_.list_agents(filter);
    if (!found) return error_response(found.error());
    return json_response(200, json::object{{"agents", json_list(*found, [](const auto& a) {
                                                return to_json(a);
                                            })}});
}

Response Routes::create_agent(const Call& call) {
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"name", "project", "harness", "goal", "instructions",
                                        "account", "network_mode", "allowed_hosts", "addons",
                                        "model", "thinking"});
        !known)
        return error_response(known.error(), reader.failed_field());
    // Required fields first, in the documented order, so the message is predictable.
    auto name = reader.required_string("name");
    if (!name) return error_response(name.error(), reader.failed_field());
    auto project = reader.optional_project("project");
    if (!project) return error_response(project.error(), reader.failed_field());
    if (!*project)
        return error_response(ErrorCode::invalid_argument, "project", "field 'project' is required");
    auto harness = reader.required_string("harness");
    if (!harness) return error_response(harness.error(), reader.failed_field());
    auto fields = read_agent_fields(reader);
    if (!fields) return error_response(fields.error(), reader.failed_field());

    auto project_id = resolve_project(store_, **project);
    if (!project_id) return error_response(project_id.error(), "project");
    store::NewAgent agent;
    agent.project_id = *project_id;
    agent.name = *name;
    agent.harness = *harness;
    agent.goal = fields->goal.value_or("");
    agent.instructions = fields->instructions.value_or("");
    agent.account = fields->account.value_or(std::nullopt);
    agent.network_mode = fields->network_mode.value_or(store::NetworkMode::filtered);
    agent.allowed_hosts = fields->allowed_hosts.value_or(std::vector<std::string>{});
    agent.addons = fields->addons.value_or(std::vector<std::string>{});
    agent.model = fields->model.value_or(std::nullopt);
    agent.thinking = fields->thinking.value_or(std::nullopt);
    std::string field;
    auto made = store_.create_agent(agent, &field);
    if (!made) return error_response(made.error(), field);
    auto json_agent = to_json(*made);
    publish("agent.created", json_agent);
    return created(json_agent, "/api/v1/agents/" + std::to_string(made->id));
}

Response Routes::update_agent(const Call& call, std::int64_t id) {
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (reader.has("project"))
        return error_response(ErrorCode::invalid_argument, "project",
                              "field 'project' cannot be changed; create a new agent in the "
                              "other project instead");
    if (auto known = reader.allow_only({"name", "harness", "goal", "instructions", "account",
                                        "network_mode", "allowed_hosts", "addons", "model", "thinking"});
        !known)
        return error_response(known.error(), reader.failed_field());
    auto fields = read_agent_fields(reader);
    if (!fields) return error_response(fields.error(), reader.failed_field());
    store::AgentChanges changes{fields->name,          fields->harness, fields->goal,
                                fields->instructions,  fields->account, fields->network_mode,
                                fields->allowed_hosts, fields->addons,  fields->model,
                                fields->thinking};
    std::string field;
    auto updated = store_.update_agent(id, changes, &field);
    if (!updated) return error_response(updated.error(), field);
    auto json_agent = to_json(*updated);
    if (!changes.empty()) publish("agent.updated", json_agent);
    return json_response(200, json_agent);
}

Response Routes::delete_agent(std::int64_t id) {
    auto agent = store_.get_agent(id);
    if (!agent) return error_response(agent.error());
    if (auto removed = store_.delete_agent(id); !removed) return error_response(removed.error());
    publish("agent.deleted", to_json(*agent));
    return no_content();
}

// ---- sessions ---------------------------------------------------------------------

namespace {
// A prompt is what a person typed or pasted; past this it is a file, which belongs in
// the project. The harness's context is smaller still.
constexpr std::size_t kMaxPromptBytes = 256 * 1024;

// "images": [{"mimeType","data"}], each checked (prompt_images.hpp).
Result<std::vector<PromptImage>> prompt_images(const json::object& body) {
    std::vector<PromptImage> images;
    std::size_t total = 0;
    const json::value* field = body.if_contains("images");
    if (field == nullptr) return images;
    const json::array* list = field->if_array();
    if (list == nullptr) return make_error(ErrorCode::invalid_argument, "field 'images' must be a list");
    if (list->size() > kMaxPromptImages)
        return make_error(ErrorCode::too_large, "a prompt may carry at most " + std::to_string(kMaxPromptImages) +
                                                    " images; it has " + std::to_string(list->size()));
    for (std::size_t index = 0; index < list->size(); ++index) {
        const std::string where = "images[" + std::to_string(index) + "]";
        const json::object* item = (*list)[index].if_object();
        if (item == nullptr) return make_error(ErrorCode::invalid_argument, where + " must be an object");
        BodyReader reader(*item);
        if (auto known = reader.allow_only({"mimeType", "data"}); !known)
            return make_error(ErrorCode::invalid_argument, where + ": " + known.error().message);
        auto mime_type = reader.required_string("mimeType");
        if (!mime_type) return make_error(ErrorCode::invalid_argument, where + ": " + mime_type.error().message);
        auto data = reader.required_string("data");
        if (!data) return make_error(ErrorCode::invalid_argument, where + ": " + data.error().message);
        PromptImage image{std::move(*mime_type), std::move(*data)};
        if (auto checked = check_prompt_image(image, where); !checked) return checked.take_error();
        total += image.data.size();
        if (total > kMaxPromptImagesBytes)
            return make_error(ErrorCode::too_large, "a prompt's images may have at most " +
                                                        std::to_string(kMaxPromptImagesBytes / (1024 * 1024)) +
                                                        " MiB of base64 in all");
        images.push_back(std::move(image));
    }
    return images;
}

Response prompt_too_large() {
    return error_response(ErrorCode::too_large, "a prompt may have at most " + std::to_string(kMaxPromptBytes) +
                                                    " bytes; put longer text in a file of the project and name it");
}
} // namespace

Response Routes::sessions(const Call& call) {
    const auto& segments = call.segments;
    if (segments.size() == 1) {
        if (call.method == "POST") return start_session(call);
        if (call.method != "GET") return not_allowed(call.method, call.target, {"GET", "POST"});
        if (auto params = query_params(call.query, {}); !params) return error_response(params.error());
        auto all = store_.list_sessions();
        if (!all) return error_response(all.error());
        return json_response(200, json::object{{"sessions", json_list(*all, [](const auto& s) {
                                                    return to_json(s);
                                                })}});
    }
    const std::string& id = segments[1];
    // The store makes ids of "s_" and hex digits: anything else names no session, and is
    // never handed on, so no answer can quote bytes of a path that are not text.
    if (!is_session_id_shape(id)) return error_response(ErrorCode::not_found, "no such session (session ids look like s_7f3a2c)");
    if (segments.size() == 2) {
        if (call.method == "DELETE") {
            if (info_.sessions == nullptr) return no_session_service();
            if (auto removed = info_.sessions->remove(id); !removed)
                return error_response(removed.error());
            return no_content();
        }
        if (call.method != "GET") return not_allowed(call.method, call.target, {"GET", "DELETE"});
        auto session = store_.get_session(id);
        if (!session) return error_response(session.error());
        return json_response(200, to_json(*session));
    }
    const std::string& action = segments[2];
    if (action == "stop") {
        if (call.method != "POST") return not_allowed(call.method, call.target, {"POST"});
        if (info_.sessions == nullptr) return no_session_service();
        auto stopping = info_.sessions->stop(id);
        if (!stopping) return error_response(stopping.error());
        return json_response(202, to_json(*stopping));
    }
    if (action == "answers") {
        // A client answers a permission request the harness asked (docs/api.md).
        if (call.method != "POST") return not_allowed(call.method, call.target, {"POST"});
        if (info_.sessions == nullptr) return no_session_service();
        auto body = parse_body(call.body);
        if (!body) return error_response(body.error());
        BodyReader reader(*body);
        if (auto known = reader.allow_only({"toolCallId", "optionId"}); !known) return error_response(known.error(), reader.failed_field());
        auto tool_call = reader.required_string("toolCallId");
        if (!tool_call) return error_response(tool_call.error(), reader.failed_field());
        auto option = reader.required_string("optionId");
        if (!option) return error_response(option.error(), reader.failed_field());
        if (auto answered = info_.sessions->answer(id, *tool_call, *option); !answered)
            return error_response(answered.error());
        return no_content();
    }
    if (action == "prompts" || action == "cancel" || action == "resume" || action == "config")
        return conversation(call, id, action);
    if (action == "changes") return changes_route(store_, info_.changes, call.method, call.target, call.query, id);
    if (action == "log") {
        if (call.method != "GET") return not_allowed(call.method, call.target, {"GET"});
        if (auto params = query_params(call.query, {}); !params) return error_response(params.error());
        if (info_.sessions == nullptr) return no_session_service();
        auto log = info_.sessions->log(id);
        if (!log) return error_response(log.error());
        Response response;
        response.body = std::move(log->text);
        response.content_type = "application/octet-stream";
        // A follower attaches with ?from=<this> and misses nothing in between.
        response.headers["X-Handler-Log-End"] = std::to_string(log->end);
        response.headers["X-Handler-Log-Truncated"] = log->truncated ? "1" : "0";
        return response;
    }
    if (action == "network" && call.method == "POST") return session_network(id, call.body);
    if (action == "network" || action == "learned" || action == "events") {
        if (call.method != "GET")
            return action == "network" ? not_allowed(call.method, call.target, {"GET", "POST"})
                                       : not_allowed(call.method, call.target, {"GET"});
        auto session = store_.get_session(id);
        if (!session) return error_response(session.error());
        if (action == "learned") {
            if (auto params = query_params(call.query, {}); !params) return error_response(params.error());
            auto hosts = store_.learned_hosts(id);
            if (!hosts) return error_response(hosts.error());
            json::array list;
            for (const auto& host : *hosts)
                list.push_back(json::object{{"host", host.host}, {"port", host.port},
                                            {"count", host.count}, {"first_seen", host.first_seen},
                                            {"last_seen", host.last_seen}});
            return json_response(200, json::object{{"learned", std::move(list)}});
        }
        if (action == "events") return session_events(id, call);
        auto params = query_params(call.query, {"after", "limit"});
        if (!params) return error_response(params.error());
        auto after = whole_number_param(*params, "after");
        if (!after) return error_response(after.error());
        auto limit = whole_number_param(*params, "limit");
        if (!limit) return error_response(limit.error());
        auto entries = store_.network_log(id, after->value_or(0), page_limit(*limit));
        if (!entries) return error_response(entries.error());
        json::array list;
        for (const auto& entry : *entries) {
            json::object item{{"id", entry.id}, {"at", entry.at}, {"host", entry.host},
                              {"port", entry.port}, {"method", entry.method},
                              {"path", entry.path}, {"verdict", entry.verdict},
                              {"rule", entry.rule}, {"reason", entry.reason},
                              {"secret", entry.secret},
                              {"bytes_up", entry.bytes_up}, {"bytes_down", entry.bytes_down},
                              {"ended_at", entry.ended_at ? json::value(*entry.ended_at) : nullptr}};
            add_origin(item, entry);
            list.push_back(std::move(item));
        }
        return json_response(200, json::object{{"entries", std::move(list)}});
    }
    if (action == "terminal")
        return error_response(ErrorCode::invalid_argument,
                              "GET " + call.target +
                                  " is a WebSocket: send it with an Upgrade: websocket header");
    return no_route(call.method, call.target);
}

Response Routes::no_session_service() {
    return error_response(ErrorCode::unavailable, "this handlerd has no session service");
}

// A conversation's prompts, cancel, resume and settings (docs/conversations.md).
Response Routes::conversation(const Call& call, const std::string& id, const std::string& action) {
    if (info_.sessions == nullptr) return no_session_service();
    const auto& segments = call.segments;
    if (action == "prompts" && segments.size() == 4) {
        if (call.method != "DELETE") return not_allowed(call.method, call.target, {"DELETE"});
        if (auto withdrawn = info_.sessions->withdraw(id, segments[3]); !withdrawn)
            return error_response(withdrawn.error());
        return no_content();
    }
    if (segments.size() != 3) return error_response(ErrorCode::not_found, "no such resource: " + call.target);
    if (call.method != "POST") return not_allowed(call.method, call.target, {"POST"});
    if (action == "cancel") {
        if (auto cancelled = info_.sessions->cancel(id); !cancelled) return error_response(cancelled.error());
        return json_response(202, json::object{{"cancelling", true}});
    }
    if (action == "resume") {
        auto resumed = info_.sessions->resume(id);
        if (!resumed) return error_response(resumed.error());
        return json_response(202, to_json(*resumed));
    }
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (action == "config") {
        if (auto known = reader.allow_only({"name", "value"}); !known) return error_response(known.error(), reader.failed_field());
        auto name = reader.required_string("name");
        if (!name) return error_response(name.error(), reader.failed_field());
        auto value = reader.required_string("value");
        if (!value) return error_response(value.error(), reader.failed_field());
        auto applied = info_.sessions->configure(id, *name, *value);
        if (!applied) return error_response(applied.error());
        return json_response(200, json::object{{"applied", *applied == Applied::now ? "now" : "on_resume"}});
    }
    if (auto known = reader.allow_only({"text", "images"}); !known) return error_response(known.error(), reader.failed_field());
    auto images = prompt_images(*body);
    if (!images) return error_response(images.error());
    Prompt prompt{"", std::move(*images)};
    if (prompt.images.empty() || reader.has("text")) {
        auto text = reader.required_string("text");
        if (!text) return error_response(text.error(), reader.failed_field());
        prompt.text = std::move(*text);
    }
    if (prompt.text.empty() && prompt.images.empty())
        return error_response(ErrorCode::invalid_argument, "field 'text' is empty");
    if (prompt.text.size() > kMaxPromptBytes) return prompt_too_large();
    auto submitted = info_.sessions->prompt(id, prompt);
    if (!submitted) return error_response(submitted.error());
    return json_response(202, json::object{{"promptId", submitted->prompt_id}, {"queued", submitted->queued}});
}

Response Routes::start_session(const Call& call) {
    if (info_.sessions == nullptr) return no_session_service();
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"agent", "harness", "name", "directory", "prompt", "args", "rows", "cols",
                                        "network", "model", "thinking", "conversation", "mcp_servers"});
        !known)
        return error_response(known.error(), reader.failed_field());
    StartRequest request;
    if (const auto* conversation = body->if_contains("conversation")) {
        if (!conversation->is_bool())
            return error_response(ErrorCode::invalid_argument, "field 'conversation' must be true or false");
        request.conversation = conversation->as_bool();
    }
    if (const auto* servers = body->if_contains("mcp_servers")) {
        // Its shape is checked against what the harness honours when the session starts.
        if (!servers->is_array())
            return error_response(ErrorCode::invalid_argument, "field 'mcp_servers' must be a list of MCP servers "
                                                               "(ACP's McpServer objects)");
        if (!servers->as_array().empty()) request.mcp_servers = json::serialize(*servers);
    }
    auto agent = reader.optional_string("agent");
    if (!agent) return error_response(agent.error(), reader.failed_field());
    auto harness = reader.optional_string("harness");
    if (!harness) return error_response(harness.error(), reader.failed_field());
    auto name = reader.optional_string("name");
    if (!name) return error_response(name.error(), reader.failed_field());
    if (int{agent->has_value()} + int{harness->has_value()} + int{name->has_value()} > 1)
        return error_response(ErrorCode::invalid_argument,
                              "give at most one of 'agent' (an agent's name), 'harness' (a "
                              "harness id such as \"shell\") and 'name' (either)");
    request.agent = *agent;
    request.harness = *harness;
    request.name = *name;
    auto directory = reader.required_string("directory");
    if (!directory) return error_response(directory.error(), reader.failed_field());
    request.directory = *directory;
    auto prompt = reader.optional_string("prompt");
    if (!prompt) return error_response(prompt.error(), reader.failed_field());
    request.prompt = prompt->value_or("");
    if (request.prompt.size() > kMaxPromptBytes) return prompt_too_large();
    auto args = reader.optional_string_list("args");
    if (!args) return error_response(args.error(), reader.failed_field());
    request.args = args->value_or(std::vector<std::string>{});
    auto network = reader.optional_string("network");
    if (!network) return error_response(network.error(), reader.failed_field());
    request.network = *network;
    auto model = reader.optional_string("model");
    if (!model) return error_response(model.error(), reader.failed_field());
    if (*model) {
        if (auto valid = store::check_model_name(**model); !valid)
            return error_response(valid.error(), "model");
        request.model = *model;
    }
    auto thinking = reader.optional_string("thinking");
    if (!thinking) return error_response(thinking.error(), reader.failed_field());
    if (*thinking) {
        if (auto valid = store::check_thinking_level(**thinking); !valid)
            return error_response(valid.error(), "thinking");
        request.thinking = *thinking;
    }
    for (const auto* field : {"rows", "cols"}) {
        const auto* value = body->if_contains(field);
        if (value == nullptr) continue;
        if (!value->is_int64() || value->as_int64() < 1 || value->as_int64() > 10000)
            return error_response(ErrorCode::invalid_argument,
                                  std::string("field '") + field +
                                      "' must be a whole number from 1 to 10000");
        (std::string_view(field) == "rows" ? request.rows : request.cols) =
            static_cast<std::uint16_t>(value->as_int64());
    }
    auto started = info_.sessions->start(request);
    if (!started) return error_response(started.error());
    return created(to_json(*started), "/api/v1/sessions/" + started->id);
}

} // namespace handler::api
