#include "api/routes_json.hpp"

#include "core/utf8.hpp"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/stream_parser.hpp>

#include <algorithm>

namespace handler::api {
namespace json = boost::json;

Response json_response(unsigned status, const json::value& body) {
    Response response;
    response.status = status;
    response.body = json::serialize(body);
    return response;
}

Response error_response(const Error& error) {
    return error_response(error.code, error.message);
}

Response error_response(const Error& error, std::string_view field) {
    if (field.empty()) return error_response(error.code, error.message);
    // As error_response(code, message), with the field the mistake is in (docs/api.md).
    Response response;
    response.status = status_for(error.code);
    response.body = json::serialize(json::object{{"error",
                                                  {{"code", to_string(error.code)},
                                                   {"message", with_valid_utf8(error.message)},
                                                   {"field", with_valid_utf8(field)}}}});
    return response;
}

Response error_response(ErrorCode code, std::string_view field, std::string message) {
    return error_response(make_error(code, std::move(message)), field);
}

Error BodyReader::fail(std::string_view field, std::string message) const {
    if (failed_field_.empty()) failed_field_ = std::string(field);
    return make_error(ErrorCode::invalid_argument, std::move(message));
}

namespace {

Error invalid(std::string message) {
    return make_error(ErrorCode::invalid_argument, std::move(message));
}

std::string field_name(std::string_view field) { return "field '" + std::string(field) + "'"; }

// 1-based line and column of byte `offset` in `text`.
std::string position(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    const auto before = text.substr(0, offset);
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const auto last_newline = before.rfind('\n');
    const auto column = last_newline == std::string_view::npos ? offset + 1
                                                               : offset - last_newline;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

} // namespace

Result<json::object> parse_body(std::string_view body) {
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
        return invalid("the request body is empty; send a JSON object");
    json::stream_parser parser;
    boost::system::error_code error;
    const std::size_t consumed = parser.write_some(body.data(), body.size(), error);
    if (error)
        return invalid("body is not valid JSON: " + error.message() + " at " +
                       position(body, consumed));
    if (const auto extra = body.find_first_not_of(" \t\r\n", consumed);
        extra != std::string_view::npos)
        return invalid("body is not valid JSON: unexpected text after the value at " +
                       position(body, extra));
    parser.finish(error);
    if (error)
        return invalid("body is not valid JSON: " + error.message() + " at " +
                       position(body, body.size()));
    json::value value = parser.release();
    if (!value.is_object()) return invalid("the request body must be a JSON object");
    return std::move(value.as_object());
}

Result<void> BodyReader::allow_only(std::initializer_list<std::string_view> fields) const {
    for (const auto& [key, value] : body_) {
        if (std::find(fields.begin(), fields.end(), std::string_view(key)) != fields.end()) continue;
        std::string known;
        for (const auto field : fields) known += (known.empty() ? "" : ", ") + std::string(field);
        return fail(key, "unknown " + field_name(key) + "; this request takes " + known);
    }
    return {};
}

Result<std::string> BodyReader::required_string(std::string_view field) const {
    const json::value* value = body_.if_contains(field);
    if (value == nullptr) return fail(field, field_name(field) + " is required");
    if (!value->is_string()) return fail(field, field_name(field) + " must be a string");
    return std::string(value->get_string());
}

Result<std::optional<std::string>> BodyReader::optional_string(std::string_view field) const {
    const json::value* value = body_.if_contains(field);
    if (value == nullptr) return std::optional<std::string>();
    if (!value->is_string()) return fail(field, field_name(field) + " must be a string");
    return std::optional<std::string>(std::string(value->get_string()));
}

Result<std::optional<std::optional<std::string>>> BodyReader::nullable_string(
    std::string_view field) const {
    using Out = std::optional<std::optional<std::string>>;
    const json::value* value = body_.if_contains(field);
    if (value == nullptr) return Out();
    if (value->is_null()) return Out(std::optional<std::string>());
    if (!value->is_string()) return fail(field, field_name(field) + " must be a string or null");
    return Out(std::string(value->get_string()));
}

Result<std::optional<std::vector<std::string>>> BodyReader::optional_string_list(
    std::string_view field) const {
    const json::value* value = body_.if_contains(field);
    if (value == nullptr) return std::optional<std::vector<std::string>>();
    if (!value->is_array()) return fail(field, field_name(field) + " must be a list of strings");
    std::vector<std::string> items;
    const auto& array = value->get_array();
    for (std::size_t i = 0; i < array.size(); ++i) {
        if (!array[i].is_string()) {
            const std::string item = std::string(field) + "[" + std::to_string(i) + "]";
            return fail(item, field_name(item) + " must be a string");
        }
        items.emplace_back(array[i].get_string());
    }
    return std::optional(std::move(items));
}

Result<std::optional<BodyReader::ProjectRef>> BodyReader::optional_project(
    std::string_view field) const {
    const json::value* value = body_.if_contains(field);
    if (value == nullptr) return std::optional<ProjectRef>();
    if (value->is_int64() && value->get_int64() > 0)
        return std::optional(ProjectRef{value->get_int64(), {}});
    if (value->is_uint64()) // above INT64_MAX: no such project
        return std::optional(ProjectRef{-1, {}});
    if (value->is_string() && value->get_string().starts_with("/"))
        return std::optional(ProjectRef{std::nullopt, std::string(value->get_string())});
    return fail(field, field_name(field) +
                                    " must be a project id (a positive integer) or an absolute path");
}

json::object to_json(const store::Context& context) {
    return {{"id", context.id}, {"name", context.name}, {"created_at", context.created_at}};
}

namespace {

json::value nullable(const std::optional<std::string>& text) {
    return text ? json::value(*text) : json::value(nullptr);
}

json::value nullable(const std::optional<std::int64_t>& number) {
    return number ? json::value(*number) : json::value(nullptr);
}

json::array strings(const std::vector<std::string>& items) {
    json::array out;
    out.reserve(items.size());
    for (const auto& item : items) out.emplace_back(item);
    return out;
}

} // namespace

json::object to_json(const store::Project& project) {
    return {{"id", project.id},
            {"name", project.name},
            {"path", project.path},
            {"context", nullable(project.context)},
            {"allowed_hosts", strings(project.allowed_hosts)},
            {"created_at", project.created_at}};
}

json::object to_json(const store::Account& account) {
    return {{"id", account.id},
            {"name", account.name},
            {"kind", account.kind},
            {"context", nullable(account.context)},
            {"base_url", nullable(account.base_url)},
            {"created_at", account.created_at}};
}

json::object to_json(const store::Agent& agent) {
    return {{"id", agent.id},
            {"name", agent.name},
            {"project", agent.project_id},
            {"harness", agent.harness},
            {"goal", agent.goal},
            {"instructions", agent.instructions},
            {"account", nullable(agent.account)},
            {"network_mode", network::to_string(agent.network_mode)},
            {"allowed_hosts", strings(agent.allowed_hosts)},
            {"addons", strings(agent.addons)},
            {"model", nullable(agent.model)},
            {"thinking", nullable(agent.thinking)},
            {"created_at", agent.created_at},
            {"updated_at", agent.updated_at}};
}

json::object to_json(const store::SessionEvent& event) {
    boost::system::error_code error;
    json::value payload = json::parse(event.payload, error);
    if (error || !payload.is_object()) payload = json::object{};
    return {{"session", event.session_id}, {"seq", event.seq}, {"at", event.at},
            {"kind", event.kind}, {"payload", std::move(payload)}};
}

json::object to_json(const ImageBuild& build, bool with_log) {
    json::object out{{"id", build.id},
                     {"harness", build.harness},
                     {"session", build.session.empty() ? json::value(nullptr) : json::value(build.session)},
                     {"image", build.image.empty() ? json::value(nullptr) : json::value(build.image)},
                     {"state", build.state},
                     {"message", build.message.empty() ? json::value(nullptr) : json::value(build.message)},
                     {"started_at", build.started_at},
                     {"ended_at", build.ended_at ? json::value(*build.ended_at) : json::value(nullptr)}};
    if (with_log) {
        out["log"] = build.log;
        out["log_truncated"] = build.log_truncated;
    }
    return out;
}

void add_origin(json::object& item, const store::NetworkEntry& entry) {
    item["connection"] = entry.connection;
    item["process"] = nullptr;
    item["tool_call"] = nullptr;
    if (entry.connection == 0) {
        item["origin"] = "untraced";
        item["origin_note"] = "recorded before handlerd traced connections";
        return;
    }
    if (!entry.origin) {
        item["origin"] = "pending";
        item["origin_note"] = "the shim has not answered yet";
        return;
    }
    const auto& origin = *entry.origin;
    item["origin_note"] = origin.note;
    if (!origin.pid) {
        item["origin"] = "unknown";
        return;
    }
    boost::system::error_code error;
    json::value parents = json::parse(origin.parents, error);
    if (error || !parents.is_array()) parents = json::array{};
    item["process"] = json::object{{"pid", *origin.pid}, {"command", origin.command}, {"parents", std::move(parents)}};
    if (origin.tool_call_id.empty()) {
        item["origin"] = "no_tool_call";
        return;
    }
    item["origin"] = "tool_call";
    item["tool_call"] = json::object{{"id", origin.tool_call_id}, {"title", origin.tool_call_title}};
}

namespace {

json::value limits_of(const std::string& stored) {
    if (stored.empty()) return nullptr;
    boost::system::error_code error;
    json::value parsed = json::parse(stored, error);
    return error || !parsed.is_array() ? json::value(nullptr) : parsed;
}

} // namespace

json::object to_json(const store::Session& session) {
    return {{"id", session.id},
            {"agent", nullable(session.agent_id)},
            {"project", session.project_id},
            {"harness", session.harness},
            {"state", to_string(session.state)},
            {"exit_code", nullable(session.exit_code)},
            {"mode", session.mode},
            {"tty", session.tty},
            {"image", session.image},
            {"container", nullable(session.container_id)},
            {"message", nullable(session.message)},
            {"network_mode", session.network_mode ? json::value(to_string(*session.network_mode)) : json::value(nullptr)},
            {"learn_until", nullable(session.learn_until)},
            // What the session may reach beyond its agent's and project's lists: its
            // harness's model hosts, and what its addons (and plugins, while it runs) added.
            {"model_hosts", strings(session.model_hosts)},
            {"addon_hosts", strings(session.addon_hosts)},
            {"model", nullable(session.model)},
            {"thinking", nullable(session.thinking)},
            {"title", nullable(session.title)},
            // Its container's limits and whether each holds here; null until it started.
            {"limits", limits_of(session.limits)},
            {"created_at", session.created_at},
            {"updated_at", session.updated_at}};
}

json::object to_json(const plugins::HarnessDescription& harness) {
    json::array models, credentials, modes;
    for (const auto& model : harness.models) models.push_back(json::object{{"id", model.id}, {"label", model.label}});
    for (const auto& credential : harness.credentials)
        credentials.push_back(
            json::object{{"kind", credential.kind}, {"env", credential.env}, {"label", credential.label}});
    for (const auto& mode : harness.modes) modes.push_back(json::object{{"id", mode.id}, {"label", mode.label}});
    const auto strings = [](const std::vector<std::string>& list) { return json::array(list.begin(), list.end()); };
    return {{"models", std::move(models)},
            {"credentials", std::move(credentials)},
            {"thinking_levels", strings(harness.thinking_levels)},
            {"modes", std::move(modes)},
            {"default_hosts", strings(harness.default_hosts)},
            {"launch_modes", strings(harness.launch_modes)},
            {"mcp", strings(harness.mcp_transports)},
            {"prompt_content", strings(harness.prompt_content)},
            {"events", harness.events},
            {"stdin", harness.stdin_protocol ? "protocol" : "input"}};
}

json::object to_json(const plugins::PluginRecord& plugin) {
    json::object out{{"id", plugin.id},
                     {"kind", plugin.kind},
                     {"version", plugin.version},
                     {"abi", plugin.abi},
                     {"name", plugin.name},
                     {"state", plugins::to_string(plugin.state)},
                     {"message", plugin.message},
                     {"library", plugin.library},
                     {"manifest", plugin.manifest},
                     {"source", plugin.source}};
    // A loaded harness: what it said of itself, or why that could not be read.
    if (plugin.harness) out["harness"] = to_json(*plugin.harness);
    else if (!plugin.description_error.empty()) out["harness_error"] = plugin.description_error;
    return out;
}

std::string event_json(std::string_view type, json::object data, std::int64_t at_ms) {
    return json::serialize(json::object{{"type", type}, {"data", std::move(data)}, {"at", at_ms}});
}

} // namespace handler::api
