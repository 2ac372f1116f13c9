// The first-session routes of the page (docs/api.md, "Setup"): the folder browser of "New
// project" and the test of a local model server. Transport-free like routes.cpp; the test
// answers later (Response::later), from the probe's own thread.
#include "api/model_server_probe.hpp"
#include "api/routes_call.hpp"
#include "api/routes_json.hpp"

#include "core/utf8.hpp"
#include "secrets/account_kinds.hpp"
#include "store/store.hpp"
#include "store/validation.hpp"

#include <boost/json/array.hpp>

#include <algorithm>
#include <memory>
#include <system_error>

namespace handler::api {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {
// A folder of more is shown cut, with a word saying so: the page is for picking one. Past
// kMaxScannedEntries entries of any kind (a folder of a million files) it stops looking.
constexpr std::size_t kMaxFolderEntries = 500;
constexpr std::size_t kMaxScannedEntries = 20000;
} // namespace

// GET /api/v1/folders?path=ABS: the subfolders of ABS (the home folder when left out), by
// name, each with why it cannot be a project, if it cannot. The reasons are POST
// /api/v1/projects' own (project_folder), so the browser never offers what it would refuse.
Response Routes::folders(const Call& call) {
    if (call.segments.size() != 1) return error_response(ErrorCode::not_found, "there is no route " + call.method + " " + call.target + " (see docs/api.md)");
    if (call.method != "GET") {
        Response refused = error_response(ErrorCode::invalid_argument, call.method + " is not allowed on " + call.target + "; use GET");
        refused.status = 405;
        refused.headers["Allow"] = "GET";
        return refused;
    }
    std::string asked;
    bool given = false;
    for (const auto& [key, value] : call.query) {
        if (key != "path")
            return error_response(ErrorCode::invalid_argument,
                                  "unknown query parameter '" + with_valid_utf8(key) + "'; this route takes path");
        if (given) return error_response(ErrorCode::invalid_argument, "query parameter 'path' is given twice");
        asked = value;
        given = true;
    }
    if (!given) {
        if (info_.home_dir.empty())
            return error_response(ErrorCode::invalid_argument, "query parameter 'path' is required here (no home folder is known)");
        asked = info_.home_dir.string();
    }
    if (!asked.starts_with("/"))
        return error_response(ErrorCode::invalid_argument,
                              "query parameter 'path' must be an absolute path, got '" + with_valid_utf8(asked) + "'");
    std::error_code error;
    const fs::path folder = fs::canonical(asked, error);
    if (error)
        return error_response(ErrorCode::invalid_argument,
                              "the folder " + with_valid_utf8(asked) + " cannot be opened: " + error.message());
    if (!fs::is_directory(folder, error))
        return error_response(ErrorCode::invalid_argument, with_valid_utf8(folder.string()) + " is not a folder");

    // Why `path` (canonical) cannot be a project, or null.
    const auto refusal = [this](const fs::path& path) -> json::value {
        auto checked = project_folder(path.string());
        if (!checked) return json::string(with_valid_utf8(checked.error().message));
        auto registered = store_.find_project_by_path(checked->string());
        if (!registered) return json::string(registered.error().message);
        if (*registered) return json::string("already a project: " + (*registered)->name);
        return nullptr;
    };

    struct Entry {
        std::string name;
        fs::path path;
    };
    std::vector<Entry> entries;
    bool truncated = false;
    fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, error);
    if (error)
        return error_response(ErrorCode::invalid_argument,
                              "the folder " + with_valid_utf8(folder.string()) + " cannot be read: " + error.message());
    std::size_t scanned = 0;
    for (; it != fs::directory_iterator(); it.increment(error)) {
        if (error) break;
        if (++scanned > kMaxScannedEntries) {
            truncated = true;
            break;
        }
        std::error_code entry_error;
        // A link counts as the folder it leads to, shown by that folder's own path:
        // that is the folder a project made of it would mount.
        const fs::path target = fs::canonical(it->path(), entry_error);
        if (entry_error || !fs::is_directory(target, entry_error)) continue;
        if (entries.size() == kMaxFolderEntries) {
            truncated = true;
            break;
        }
        entries.push_back({it->path().filename().string(), target});
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });

    json::array list;
    for (const auto& entry : entries) {
        list.push_back(json::object{{"name", with_valid_utf8(entry.name)},
                                    {"path", with_valid_utf8(entry.path.string())},
                                    {"hidden", entry.name.starts_with(".")},
                                    {"refused", refusal(entry.path)}});
    }
    json::value parent = nullptr;
    if (folder != folder.root_path()) parent = json::string(folder.parent_path().string());
    return json_response(200, json::object{{"path", with_valid_utf8(folder.string())},
                                           {"parent", parent},
                                           {"home", info_.home_dir.string()},
                                           {"refused", refusal(folder)},
                                           {"folders", std::move(list)},
                                           {"truncated", truncated}});
}

// POST /api/v1/model-servers/test {"kind": "llama-cpp"|"ollama", "base_url"?: URL}.
Response Routes::model_servers(const Call& call) {
    if (call.segments.size() != 2 || call.segments[1] != "test")
        return error_response(ErrorCode::not_found, "there is no route " + call.method + " " + call.target + " (see docs/api.md)");
    if (call.method != "POST") {
        Response refused = error_response(ErrorCode::invalid_argument, call.method + " is not allowed on " + call.target + "; use POST");
        refused.status = 405;
        refused.headers["Allow"] = "POST";
        return refused;
    }
    if (!call.query.empty())
        return error_response(ErrorCode::invalid_argument, "this route takes no query parameters");
    auto body = parse_body(call.body);
    if (!body) return error_response(body.error());
    BodyReader reader(*body);
    if (auto known = reader.allow_only({"kind", "base_url"}); !known) return error_response(known.error());
    auto kind = reader.required_string("kind");
    if (!kind) return error_response(kind.error());
    if (!secrets::is_local_server(*kind))
        return error_response(ErrorCode::invalid_argument,
                              "field 'kind' must be a local model server (" +
                                  secrets::account_kind_names(secrets::Holds::local_server) + "), got '" +
                                  with_valid_utf8(*kind) + "'");
    auto base_url = reader.optional_string("base_url");
    if (!base_url) return error_response(base_url.error());
    // The accounts' own rule, so the test reaches only what an account could be made of.
    auto url = store::normalize_base_url(base_url->value_or(std::string(secrets::default_base_url(*kind))));
    if (!url) return error_response(url.error());
    if (info_.model_servers == nullptr)
        return error_response(ErrorCode::unavailable, "this handlerd cannot test model servers");
    Response response;
    response.later = [probe = info_.model_servers, asked_kind = *kind, asked_url = *url](std::function<void(Response)> reply) {
        probe->probe(asked_kind, asked_url, [done = std::move(reply)](ModelServerReport report) {
            json::array models;
            for (auto& name : report.models) models.emplace_back(std::move(name));
            done(json_response(200, json::object{{"url", with_valid_utf8(report.url)},
                                                  {"reachable", report.reachable},
                                                  {"status", report.status},
                                                  {"models", std::move(models)},
                                                  {"more", report.more},
                                                  {"error", report.error.empty() ? json::value(nullptr)
                                                                                 : json::value(with_valid_utf8(report.error))}}));
        });
    };
    return response;
}

} // namespace handler::api
