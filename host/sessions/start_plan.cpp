#include "sessions/start_plan.hpp"

#include "network/policy.hpp"
#include "runtime/container_runtime.hpp"
#include "secrets/account_kinds.hpp"
#include "store/store.hpp"
#include "store/validation.hpp"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <set>

namespace handler::sessions {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// The deepest project whose folder holds `directory` (projects may nest).
std::optional<store::Project> project_for(const std::vector<store::Project>& projects,
                                          const fs::path& directory) {
    std::optional<store::Project> best;
    const fs::path where = directory.lexically_normal();
    for (const auto& project : projects) {
        const fs::path root = fs::path(project.path).lexically_normal();
        const auto relative = where.lexically_relative(root);
        if (relative.empty() || *relative.begin() == "..") continue;
        if (!best || project.path.size() > best->path.size()) best = project;
    }
    return best;
}

// Whether `folder` is the home folder or holds it (what `project add` refuses).
bool is_or_holds(const fs::path& folder, const fs::path& home) {
    if (home.empty()) return false;
    const auto relative = home.lexically_normal().lexically_relative(folder.lexically_normal());
    return !relative.empty() && *relative.begin() != "..";
}

Error no_project(const std::string& directory, const fs::path& home) {
    if (is_or_holds(directory, home))
        return make_error(ErrorCode::not_found,
                          "no project holds " + directory +
                              ", and it cannot be one: it is or holds your home folder, where the "
                              "agent would see ~/.ssh and all your projects. Register the project's own "
                              "folder (`handler project add PATH`), or run this inside a registered "
                              "project's folder (`handler project list` shows them)");
    return make_error(ErrorCode::not_found, "no project holds " + directory + "; add one with `handler project add " +
                                                directory + "`, or run this inside a project's folder");
}

std::vector<store::Agent> agents_named(const StartSnapshot& snapshot, const std::optional<store::Project>& project,
                                       const std::optional<std::string>& name) {
    std::vector<store::Agent> found;
    for (const auto& agent : snapshot.agents)
        if ((!name || agent.name == *name) && (!project || agent.project_id == project->id)) found.push_back(agent);
    return found;
}

// Which agent or harness the request names (agent unset: `harness` runs with defaults).
struct Target {
    std::optional<store::Agent> agent;
    std::string harness;
};

Result<Target> resolve_target(const api::StartRequest& request, const StartSnapshot& snapshot,
                              const HarnessCatalog& harnesses, const std::optional<store::Project>& project) {
    Target target;
    if (request.agent || request.name) {
        const std::string& name = request.agent ? *request.agent : *request.name;
        auto agents = agents_named(snapshot, project, name);
        if (agents.size() > 1)
            return make_error(ErrorCode::conflict, "agent '" + name +
                                                       "' exists in several projects; run this inside the "
                                                       "project's folder");
        if (agents.size() == 1) {
            target.agent = agents.front();
        } else if (request.name && harnesses.has_harness(name)) {
            target.harness = name;
        } else {
            return make_error(ErrorCode::not_found,
                              "no agent named '" + name + "'" +
                                  (project ? " in project '" + project->name + "'" : std::string()) +
                                  (request.name ? " and no harness with that id" : std::string()) +
                                  "; `handler agent list` and `handler plugins list` show them");
        }
    } else if (request.harness) {
        target.harness = *request.harness;
    } else if (project) {
        auto agents = agents_named(snapshot, project, std::nullopt);
        if (agents.size() == 1) {
            target.agent = agents.front();
        } else if (agents.empty()) {
            target.harness = kDefaultHarness;
        } else {
            std::string names;
            for (const auto& each : agents) names += (names.empty() ? "" : ", ") + each.name;
            return make_error(ErrorCode::invalid_argument,
                              "project '" + project->name + "' has several agents (" + names + "); name one");
        }
    }
    if (target.agent) target.harness = target.agent->harness;
    return target;
}

std::string join(const std::vector<std::string>& words) {
    std::string joined;
    for (const auto& word : words) joined += (joined.empty() ? "" : ", ") + word;
    return joined;
}

// The MCP servers of a request (ACP's McpServer[]: stdio ones have a command, the
// others a "type" of http or sse) that the harness does not honour, as "'name' (transport)".
// A list that is not that shape is refused, naming the entry.
Result<std::vector<std::string>> unhonoured_mcp(const std::string& servers_json,
                                                const plugins::HarnessDescription& harness) {
    std::vector<std::string> unhonoured;
    if (servers_json.empty()) return unhonoured;
    boost::system::error_code error;
    const json::value servers = json::parse(servers_json, error);
    if (error || !servers.is_array())
        return make_error(ErrorCode::invalid_argument, "mcp_servers is not a JSON array of MCP servers");
    std::size_t index = 0;
    for (const auto& entry : servers.get_array()) {
        const std::string where = "mcp_servers[" + std::to_string(index++) + "]";
        const auto* server = entry.if_object();
        const auto* name = server ? server->if_contains("name") : nullptr;
        if (name == nullptr || !name->is_string() || name->get_string().empty())
            return make_error(ErrorCode::invalid_argument, where + " has no \"name\"");
        std::string transport = "stdio";
        if (const auto* type = server->if_contains("type")) {
            if (!type->is_string() || (type->get_string() != "http" && type->get_string() != "sse" &&
                                       type->get_string() != "stdio"))
                return make_error(ErrorCode::invalid_argument, where + ": \"type\" is not stdio, http or sse");
            transport = std::string(type->get_string());
        }
        if (transport == "stdio") {
            const auto* command = server->if_contains("command");
            if (command == nullptr || !command->is_string() || command->get_string().empty())
                return make_error(ErrorCode::invalid_argument, where + " (stdio) has no \"command\"");
        } else {
            const auto* url = server->if_contains("url");
            if (url == nullptr || !url->is_string() || url->get_string().empty())
                return make_error(ErrorCode::invalid_argument, where + " (" + transport + ") has no \"url\"");
        }
        const auto& honoured = harness.mcp_transports;
        if (std::find(honoured.begin(), honoured.end(), transport) == honoured.end())
            unhonoured.push_back("'" + std::string(name->get_string()) + "' (" + transport + ")");
    }
    return unhonoured;
}

// What the harness's description rules out, in its own words.
Result<void> check_against(const std::string& harness, const plugins::HarnessDescription& description,
                           const api::StartRequest& request, const StartPlan& plan) {
    if (request.thinking && !description.takes_thinking_level(*request.thinking)) {
        return make_error(ErrorCode::invalid_argument, "harness '" + harness + "' has no thinking level '" +
                                                           *request.thinking + "'; its levels are " +
                                                           join(description.thinking_levels));
    }
    if (request.conversation && !description.holds_conversations())
        return make_error(ErrorCode::invalid_argument,
                          "harness '" + harness + "' does not hold conversations (its launch modes: " +
                              (description.launch_modes.empty() ? std::string("not declared")
                                                                : join(description.launch_modes)) +
                              "); run it with a prompt (handler run -p) or in its terminal instead");
    if (plan.account && !description.takes_credential(plan.account->kind))
        return make_error(ErrorCode::invalid_argument,
                          "agent '" + plan.agent->name + "' runs on account '" + plan.account->name + "', a " +
                              plan.account->kind + " account, and harness '" + harness + "' takes " +
                              description.credentials_text() + "; choose another with `handler agent edit " +
                              plan.agent->name + " --account NAME`");
    return {};
}

// The start modes are the network modes seen from the harness's side (docs/harnesses.md,
// "Start modes"): no network means locked down (asks before acting), open network means
// open (asks nothing, the container being the sandbox), anything between is guarded.
// Taken at launch: a harness's permission mode cannot change under it, so a later change
// of the agent's network mode applies to its network at once and to its permissions from
// its next session.
plugins::StartMode start_mode_for(network::Mode network_mode) {
    return network_mode == network::Mode::none   ? plugins::StartMode::locked_down
           : network_mode == network::Mode::open ? plugins::StartMode::open
                                                 : plugins::StartMode::guarded;
}

std::string rule_text(const plugins::AllowedHost& host) {
    return host.port == 0 ? host.pattern : host.pattern + ":" + std::to_string(host.port);
}

} // namespace

Result<StartPlan> plan_start(const api::StartRequest& given, const StartSnapshot& snapshot,
                             const HarnessCatalog& harnesses, const StartSettings& settings) {
    api::StartRequest request = given;
    if (int{request.agent.has_value()} + int{request.harness.has_value()} + int{request.name.has_value()} > 1)
        return make_error(ErrorCode::invalid_argument, "name at most one of an agent, a harness, or a name for either");
    if (!fs::path(request.directory).is_absolute())
        return make_error(ErrorCode::invalid_argument,
                          "directory must be an absolute path, got '" + request.directory + "'");

    std::optional<store::Project> project = project_for(snapshot.projects, request.directory);
    auto target = resolve_target(request, snapshot, harnesses, project);
    if (!target) return target.take_error();
    if (target->agent && !project) {
        const auto owner = std::find_if(snapshot.projects.begin(), snapshot.projects.end(),
                                        [&](const auto& each) { return each.id == target->agent->project_id; });
        if (owner == snapshot.projects.end())
            return make_error(ErrorCode::not_found, "project " + std::to_string(target->agent->project_id) +
                                                        " of agent '" + target->agent->name + "' does not exist");
        project = *owner;
    }
    if (!project) return no_project(request.directory, settings.home_dir);

    StartPlan plan;
    plan.project = *project;
    plan.agent = target->agent;
    // The agent's model and thinking level are its sessions' defaults; the session's own win.
    if (plan.agent) {
        if (!request.model) request.model = plan.agent->model;
        if (!request.thinking) request.thinking = plan.agent->thinking;
    }
    if (plan.agent && plan.agent->account)
        for (const auto& account : snapshot.accounts)
            if (account.name == *plan.agent->account) plan.account = account;
    if (plan.account && secrets::is_local_server(plan.account->kind)) {
        auto server = local_server(*plan.account);
        if (!server) return server.take_error();
        plan.local_server = std::move(*server);
    }

    auto described = harnesses.describe(target->harness);
    if (!described) return described.take_error();
    plan.harness = std::move(*described);
    if (auto checked = check_against(target->harness, plan.harness, request, plan); !checked)
        return checked.take_error();

    store::NewSession& record = plan.record;
    if (plan.agent) record.agent_id = plan.agent->id;
    record.harness = target->harness;
    record.project_id = plan.project.id;
    record.mode = request.conversation ? "conversation" : request.prompt.empty() ? "interactive" : "headless";
    // A headless run's (and a conversation's) output is the program's stdout and stderr,
    // kept apart (harnesses print structured events on stdout); everything else gets a
    // terminal.
    record.tty = request.prompt.empty() && !request.conversation;
    record.model = request.model;
    record.thinking = request.thinking;
    record.mcp_servers = request.mcp_servers;
    record.image = settings.default_image;
    if (request.network) {
        const auto mode = network::parse_mode(*request.network, network::ModeHolder::session);
        if (!mode)
            return make_error(ErrorCode::invalid_argument, "network mode '" + *request.network +
                                                               "' is not one of " +
                                                               network::mode_list(network::ModeHolder::session));
        record.network_mode = *mode;
        if (*mode == network::Mode::learn) record.learn_until = settings.now_ms + settings.learn_window.count();
    }
    plan.network_mode =
        record.network_mode.value_or(plan.agent ? plan.agent->network_mode : network::Mode::filtered);

    plugins::LaunchRequest& launch = plan.launch;
    launch.mode = record.tty ? plugins::LaunchMode::interactive : plugins::LaunchMode::headless;
    launch.start_mode = start_mode_for(plan.network_mode);
    launch.project_path = plan.project.path;
    launch.prompt = request.prompt;
    launch.model = request.model.value_or("");
    launch.thinking_level = request.thinking.value_or("");
    launch.account_kind = plan.account ? plan.account->kind : std::string();
    launch.extra_args = request.args;
    launch.conversation = request.conversation;
    launch.mcp_servers = request.mcp_servers;
    if (plan.local_server) launch.account_base_url = plan.local_server->container_url;

    if (plan.agent) plan.addons = plan.agent->addons;
    auto unhonoured = unhonoured_mcp(request.mcp_servers, plan.harness);
    if (!unhonoured) return unhonoured.take_error();
    plan.unhonoured_mcp = std::move(*unhonoured);
    plan.prompt_payload = json::serialize(
        json::object{{"content", json::object{{"type", "text"}, {"text", request.prompt}}}});
    plan.rows = request.rows;
    plan.cols = request.cols;
    return plan;
}

Result<ContainerPlan> plan_container(const StartPlan& plan, const std::string& session_id,
                                     plugins::LaunchSpec launch,
                                     const std::vector<std::pair<std::string, plugins::LaunchSpec>>& contributions,
                                     const StartSettings& settings) {
    ContainerPlan out;
    for (const auto& [addon, contribution] : contributions)
        if (auto merged = merge_addon(addon, contribution, launch, out.addon_hosts); !merged)
            return merged.take_error();

    for (const auto& secret : launch.secret_env)
        if (std::find(out.key_kinds.begin(), out.key_kinds.end(), secret.secret_name) == out.key_kinds.end())
            out.key_kinds.push_back(secret.secret_name);
    if (!out.key_kinds.empty() && !settings.has_key_store)
        return make_error(ErrorCode::unavailable, "the harness needs a key and this handlerd has no key store");

    // The harness's model hosts, and the hosts of the keys it uses (where it is meant to
    // go), kept with the session for every later decision.
    for (const auto& host : launch.allowed_hosts) out.model_hosts.push_back(rule_text(host));
    for (const auto& kind : std::set<std::string>(out.key_kinds.begin(), out.key_kinds.end()))
        if (const auto* provider = secrets::provider_for(kind))
            for (const auto& host : provider->hosts)
                if (std::find(out.model_hosts.begin(), out.model_hosts.end(), host) == out.model_hosts.end())
                    out.model_hosts.emplace_back(host);
    if (plan.local_server) out.model_hosts.push_back(plan.local_server->rule);
    for (const auto* hosts : {&out.model_hosts, &out.addon_hosts})
        for (const auto& text : *hosts)
            if (auto rule = network::parse_rule(text); !rule) return rule.take_error();

    LaunchContext& context = out.context;
    if (!launch.account_state_env.empty() && plan.account) {
        // One folder per account, kept for the next session (a login the harness
        // refreshes); private to the user, and never shared across contexts.
        const auto& account = *plan.account;
        if (auto same = store::Store::check_same_context(account, plan.project); !same) return same.take_error();
        if (settings.account_state_root.empty())
            return make_error(ErrorCode::unavailable, "this handlerd keeps no account state");
        context.account_state_dir = settings.account_state_root / std::to_string(account.id);
    }
    if (!launch.session_state_env.empty()) {
        if (settings.session_root.empty()) return make_error(ErrorCode::unavailable, "this handlerd keeps no session state");
        context.session_state_dir = settings.session_root / session_id / runtime::kSessionStateFolder;
    }
    context.session_id = session_id;
    context.project_path = plan.project.path;
    context.default_image = settings.default_image;
    context.control_dir = settings.control_root / session_id;
    context.helper_dir = settings.helper_dir;
    context.tty = plan.record.tty;
    context.rows = plan.rows;
    context.cols = plan.cols;
    context.proxy_port = settings.proxy_port;
    context.trust_ca = settings.trust_ca;
    // The mode it starts in decides the container's network; a later change of mode
    // applies to the proxy at once, and to the network at the next session (docs/network.md).
    context.open_network = plan.network_mode == network::Mode::open;
    out.build_image = launch.image.empty();
    out.launch = std::move(launch);
    return out;
}

} // namespace handler::sessions
