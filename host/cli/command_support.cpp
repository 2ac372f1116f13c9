#include "cli/command_support.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include "cli/output.hpp"

#include <algorithm>
#include <ostream>

namespace handler::cli {
namespace json = boost::json;

std::optional<json::value> Session::call(std::string_view method, std::string_view target,
                                         const json::value* body) {
    if (!client_) client_ = context_.connect();
    const std::string payload = body != nullptr ? json::serialize(*body) : std::string();
    auto response = client_->call(method, target, payload);
    if (!response) {
        context_.err << "handler: " << response.error().message << '\n';
        const bool unavailable = response.error().code == ErrorCode::unavailable;
        if (unavailable && context_.as_root)
            context_.err << "handler: you are root, and handlerd runs as an unprivileged "
                            "user; if scripts/install.sh set it up, use: "
                            "su - handler -c 'handler ...'\n";
        exit_code_ = unavailable ? kExitUnavailable : kExitInternal;
        return std::nullopt;
    }
    if (response->status == 204) return json::value(nullptr);
    boost::system::error_code parse_error;
    json::value parsed = json::parse(response->body, parse_error);
    if (response->status >= 400) {
        std::string message = "handlerd answered " + std::to_string(response->status);
        if (!parse_error && parsed.is_object())
            if (const auto* error = parsed.as_object().if_contains("error");
                error != nullptr && error->is_object())
                if (const auto* text = error->as_object().if_contains("message");
                    text != nullptr && text->is_string())
                    message = std::string(text->as_string());
        context_.err << "handler: " << message << '\n';
        exit_code_ = response->status >= 500 ? kExitInternal : kExitRefused;
        return std::nullopt;
    }
    if (parse_error) {
        context_.err << "handler: handlerd answered something that is not JSON ("
                     << parse_error.message() << ")\n";
        exit_code_ = kExitInternal;
        return std::nullopt;
    }
    return parsed;
}

int Session::fail(std::string_view message, int code) {
    context_.err << "handler: " << message << '\n';
    exit_code_ = code;
    return code;
}

std::string url_encode(std::string_view text) {
    return boost::urls::encode(text, boost::urls::unreserved_chars);
}

std::string session_path(const std::string& id) { return "/api/v1/sessions/" + url_encode(id); }

namespace {

std::string normal_form(const std::filesystem::path& folder) {
    std::string text = folder.lexically_normal().string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    return text;
}

// Why `handler project add` would refuse `folder` for being or holding the home folder
// (api/routes.cpp decides; this only keeps the CLI from suggesting it), or empty.
std::string home_refusal(const std::filesystem::path& folder, const std::filesystem::path& home) {
    if (home.empty()) return {};
    const std::string home_text = normal_form(home);
    const std::string text = normal_form(folder);
    if (home_text == text) return "it is your home folder";
    if (home_text.starts_with(text == "/" ? text : text + "/")) return "it contains your home folder";
    return {};
}

} // namespace

std::optional<json::object> resolve_project(Session& session, const Options& options,
                                            std::string_view other_ways) {
    const std::filesystem::path folder = options.project.empty()
                                             ? session.context().current_dir
                                             : std::filesystem::absolute(options.project);
    auto answer = session.call("GET", "/api/v1/projects?path=" + url_encode(folder.string()));
    if (!answer) return std::nullopt;
    const auto& projects = answer->as_object().at("projects").as_array();
    if (!projects.empty()) return projects.front().as_object();
    const std::string refusal = home_refusal(folder, session.context().home_dir);
    if (refusal.empty())
        session.fail("no registered project contains " + folder.string() +
                     "; register it with `handler project add " + folder.string() +
                     "`, or pass --project PATH" + std::string(other_ways));
    else
        session.fail("no registered project contains " + folder.string() + ", and it cannot be one: " +
                     refusal + ". Register the project's own folder with `handler project add PATH` "
                     "and run this inside it, or pass --project PATH" + std::string(other_ways));
    return std::nullopt;
}

std::optional<json::object> resolve_agent(Session& session, const Options& options,
                                          json::object* project_out, std::string_view other_ways) {
    auto project = resolve_project(session, options, other_ways);
    if (!project) return std::nullopt;
    auto answer = session.call("GET", "/api/v1/agents?project=" +
                                          std::to_string(project->at("id").to_number<std::int64_t>()) +
                                          "&name=" + url_encode(options.name));
    if (!answer) return std::nullopt;
    const auto& agents = answer->as_object().at("agents").as_array();
    if (agents.empty()) {
        session.fail("no agent named '" + options.name + "' in project '" +
                     std::string(project->at("name").as_string()) +
                     "'; see `handler agent list`");
        return std::nullopt;
    }
    if (project_out != nullptr) *project_out = *project;
    return agents.front().as_object();
}

std::optional<std::map<std::int64_t, std::string>> names_by_id(Session& session,
                                                               std::string_view target,
                                                               std::string_view key) {
    auto answer = session.call("GET", target);
    if (!answer) return std::nullopt;
    std::map<std::int64_t, std::string> names;
    for (const auto& item : answer->as_object().at(key).as_array())
        names[item.as_object().at("id").to_number<std::int64_t>()] =
            std::string(item.as_object().at("name").as_string());
    return names;
}

int print_or_json(Session& session, const Options& options, const json::value& value,
                  const std::function<void(std::ostream&)>& human) {
    if (options.json_output)
        print_json(session.context().out, value);
    else
        human(session.context().out);
    return kExitOk;
}

int command_list(Session& session, const Options& options, std::string_view target,
                 std::string_view key, const std::vector<std::string>& columns) {
    auto answer = session.call("GET", target);
    if (!answer) return session.exit_code();
    const auto& items = answer->as_object().at(key).as_array();
    return print_or_json(session, options, items,
                         [&](std::ostream& out) { print_table(out, items, columns); });
}

int patch_record(Session& session, const Options& options, const std::string& target,
                 json::object body, std::string_view command,
                 const std::function<void(std::ostream&, json::object)>& human) {
    if (body.empty())
        return session.fail("nothing to change; see `handler " + std::string(command) +
                                " --help`",
                            kExitUsage);
    json::value value = std::move(body);
    auto updated = session.call("PATCH", target, &value);
    if (!updated) return session.exit_code();
    return print_or_json(session, options, *updated, [&](std::ostream& out) {
        if (human) return human(out, updated->as_object());
        json::object record = updated->as_object();
        show_times(record, {"created_at", "updated_at"}, session.clock(), session.time_zone(),
                   TimeStyle::local_time);
        print_record(out, record);
    });
}

json::array string_list(const std::vector<std::string>& items) {
    json::array out;
    for (const auto& item : items) out.emplace_back(item);
    return out;
}

void put_list_changes(json::object& body, const json::object& record, const char* field,
                      const std::vector<std::string>& add, const std::vector<std::string>& remove) {
    if (add.empty() && remove.empty()) return;
    json::array list;
    const auto* current = record.if_contains(field);
    for (const auto& entry : current && current->is_array() ? current->as_array() : json::array{}) {
        const std::string existing(entry.as_string());
        if (std::find(remove.begin(), remove.end(), existing) == remove.end()) list.emplace_back(existing);
    }
    for (const auto& entry : add)
        if (std::find(list.begin(), list.end(), json::value(entry)) == list.end()) list.emplace_back(entry);
    body[field] = std::move(list);
}

void write_output(CliContext& context, api::OutputStream stream, std::string_view bytes) {
    if (stream == api::OutputStream::stderr_) {
        if (context.write_err) return context.write_err(bytes);
        context.err.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        context.err.flush();
        return;
    }
    if (context.write_out) return context.write_out(bytes);
    context.out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    context.out.flush();
}

} // namespace handler::cli
