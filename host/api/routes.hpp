// The route table of the v1 API (docs/api.md): every route except the WebSockets, which
// the transport serves itself; and the web page's files (any GET outside /api/).
//
// Transport-free: it takes a Request and returns a Response, so tests call it directly.
// It never throws and never crashes the daemon: a bug becomes a 500 with a message.
// Every write goes through one Store transaction, so a failed request writes nothing;
// a successful one publishes an event ({"type":"agent.created","data":{...},"at":MS}).
#pragma once

#include "api/event_hub.hpp"
#include "api/http_types.hpp"
#include "api/session_control.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"
#include "plugins/plugin_record.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::store {
class Store;
}
namespace handler::secrets {
class SecretStore;
}

namespace handler::api {

class ChangesSource;
class UiAssets;
class UiLogins;
class ModelServerProbe;

// What the routes learn from the daemon rather than the store. Plain functions so the
// daemon passes lambdas and tests pass canned values.
struct DaemonInfo {
    // The body of GET /api/v1/status. Unset → 503.
    std::function<boost::json::object()> status;
    // The plugins found at start, loaded or not. Unset → an empty list.
    std::function<std::vector<plugins::PluginRecord>()> plugins;
    // The user's home folder: a project may not be it or contain it, since the agent
    // would then see ~/.ssh and every other project. Empty → no such check.
    std::filesystem::path home_dir;
    // Starts, stops and removes sessions; null → those routes answer 503.
    SessionControl* sessions = nullptr;
    // Accounts' keys; null → the key routes answer 503.
    secrets::SecretStore* secrets = nullptr;
    // The web page's files (GET of any path outside /api/); null → 404 with ui_missing.
    const UiAssets* ui_assets = nullptr;
    std::string ui_missing = "this handlerd was started without its page";
    // The page's logins (/api/v1/ui/...); null → those routes answer 503.
    UiLogins* ui_logins = nullptr;
    // The bound TCP port, for the login URL; unset or 0 → TCP is off.
    std::function<std::uint16_t()> tcp_port;
    // Handler's own folders (data, config, runtime): a project may not be, hold or sit in
    // one, since the agent would see the keys and the database. Empty → no such check.
    std::vector<std::filesystem::path> handler_dirs;
    // Reaches local model servers for POST /api/v1/model-servers/test; null → 503.
    ModelServerProbe* model_servers = nullptr;
    // A session's Changes (GET /api/v1/sessions/{id}/changes); null → 503.
    ChangesSource* changes = nullptr;
};

class Routes final : public RequestHandler {
public:
    // `store`, `events` and `clock` must outlive the routes.
    Routes(store::Store& store, EventHub& events, const Clock& clock, DaemonInfo info);

    Response handle(const Request& request) override;

private:
    struct Call; // a parsed request: method, path segments, query, body
    Response dispatch(const Call& call);

    Response status(const Call& call);
    Response plugins(const Call& call);
    Response contexts(const Call& call);
    Response projects(const Call& call);
    Response accounts(const Call& call);
    Response account_secret(const Call& call, std::int64_t id);
    boost::json::object account_json(const store::Account& account) const;
    Response agents(const Call& call);
    Response sessions(const Call& call);
    Response start_session(const Call& call);
    Response conversation(const Call& call, const std::string& id, const std::string& action);
    Response no_session_service();
    Response session_network(const std::string& id, std::string_view body); // routes_network.cpp
    Response session_events(const std::string& id, const Call& call);
    Response ui(const Call& call);
    Response images(const Call& call); // routes_images.cpp
    // routes_setup.cpp: the folder browser and the model server test (docs/api.md, "Setup").
    Response folders(const Call& call);
    Response model_servers(const Call& call);
    // Why `path` cannot be a project (its canonical folder otherwise): the checks of POST
    // /api/v1/projects, shared with the folder browser so both refuse the same folders.
    Result<std::filesystem::path> project_folder(const std::string& path) const;

    Response list_projects(const Call& call);
    Response create_project(const Call& call);
    Response update_project(const Call& call, std::int64_t id);
    Response update_account(const Call& call, std::int64_t id);
    Response delete_account(std::int64_t id);
    Response list_agents(const Call& call);
    Response create_agent(const Call& call);
    Response update_agent(const Call& call, std::int64_t id);
    Response delete_agent(std::int64_t id);

    void publish(std::string_view type, boost::json::object data);

    store::Store& store_;
    EventHub& events_;
    const Clock& clock_;
    DaemonInfo info_;
};

} // namespace handler::api
