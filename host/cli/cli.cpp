#include "cli/cli.hpp"

#include "cli/chat.hpp"
#include "cli/command_support.hpp"
#include "cli/completions.hpp"
#include "cli/output.hpp"
#include "cli/session_commands.hpp"
#include "cli/terminal.hpp"
#include "core/paths.hpp"
#include "network/host_rule.hpp"
#include "network/network_mode.hpp"
#include "secrets/account_kinds.hpp"
#include "settings/settings.hpp"
#include "setup/setup.hpp"
#include "store/validation.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace handler::cli {
namespace json = boost::json;

namespace {

// ---- handlers: handlerd's state, contexts, projects, agents ------------------------

int command_status(Session& session, const Options& options) {
    auto status = session.call("GET", "/api/v1/status");
    if (!status) return session.exit_code();
    return print_or_json(session, options, *status, [&](std::ostream& out) {
        print_status(out, status->as_object());
    });
}

int command_plugins_list(Session& session, const Options& options) {
    auto answer = session.call("GET", "/api/v1/plugins");
    if (!answer) return session.exit_code();
    const auto& plugins = answer->as_object().at("plugins").as_array();
    return print_or_json(session, options, plugins, [&](std::ostream& out) {
        print_table(out, plugins, {"id", "kind", "version", "abi", "state", "message"});
    });
}

int command_context_add(Session& session, const Options& options) {
    json::value body = {{"name", options.name}};
    auto created = session.call("POST", "/api/v1/contexts", &body);
    if (!created) return session.exit_code();
    session.context().out << "Added context " << options.name << ".\n";
    return kExitOk;
}

// --allow and --disallow applied to the allowed_hosts of `record` (an agent or a project).
void put_host_changes(json::object& body, const json::object& record, const Options& options) {
    // The list holds each rule as handlerd stores it (lower case, canonical addresses and
    // ports), so a rule to remove is written that way before it is looked for there.
    std::vector<std::string> remove;
    for (const auto& rule : options.remove_hosts) {
        auto parsed = network::parse_rule(rule);
        remove.push_back(parsed ? parsed->text : rule);
    }
    put_list_changes(body, record, "allowed_hosts", options.allow_hosts, remove);
}

int command_project_add(Session& session, const Options& options) {
    json::object body = {{"path", std::filesystem::absolute(options.path).string()}};
    if (!options.name.empty()) body["name"] = options.name;
    if (!options.context.empty()) body["context"] = options.context;
    if (!options.allow_hosts.empty()) body["allowed_hosts"] = string_list(options.allow_hosts);
    json::value value = body;
    auto created = session.call("POST", "/api/v1/projects", &value);
    if (!created) return session.exit_code();
    const auto& project = created->as_object();
    session.context().out << "Registered project " << display(project.at("name")) << " ("
                          << display(project.at("path")) << ").\n";
    return kExitOk;
}

int command_project_edit(Session& session, const Options& options) {
    auto project = resolve_project(session, options);
    if (!project) return session.exit_code();
    json::object body;
    if (options.rename) body["name"] = *options.rename;
    if (!options.context.empty()) body["context"] = options.context;
    if (options.clear_context) body["context"] = nullptr;
    put_host_changes(body, *project, options);
    const auto id = project->at("id").to_number<std::int64_t>();
    return patch_record(session, options, "/api/v1/projects/" + std::to_string(id),
                        std::move(body), "project edit");
}

void put_agent_fields(json::object& body, const Options& options) {
    if (options.goal) body["goal"] = *options.goal;
    if (options.instructions) body["instructions"] = *options.instructions;
    if (options.account) body["account"] = *options.account;
    if (options.clear_account) body["account"] = nullptr;
    if (options.network) body["network_mode"] = *options.network;
    // The defaults of the agent's sessions; `handler run --model` still wins for one.
    if (options.session_model) body["model"] = *options.session_model;
    if (options.clear_model) body["model"] = nullptr;
    if (options.session_thinking) body["thinking"] = *options.session_thinking;
    if (options.clear_thinking) body["thinking"] = nullptr;
}

// An agent as people read it: its project's name, its times as local times.
void print_agent(Session& session, std::ostream& out, json::object agent,
                 const json::object& project) {
    if (agent.if_contains("project") != nullptr && agent.at("project") == project.at("id"))
        agent["project"] = project.at("name");
    show_times(agent, {"created_at", "updated_at"}, session.clock(), session.time_zone(),
               TimeStyle::local_time);
    print_record(out, agent);
}

int command_agent_add(Session& session, const Options& options) {
    auto project = resolve_project(session, options);
    if (!project) return session.exit_code();
    json::object body = {{"name", options.name},
                         {"project", project->at("id")},
                         {"harness", options.harness}};
    put_agent_fields(body, options);
    if (!options.allow_hosts.empty()) body["allowed_hosts"] = string_list(options.allow_hosts);
    if (!options.addons.empty()) body["addons"] = string_list(options.addons);
    json::value value = body;
    auto created = session.call("POST", "/api/v1/agents", &value);
    if (!created) return session.exit_code();
    return print_or_json(session, options, *created, [&](std::ostream& out) {
        out << "Added agent " << options.name << " (" << options.harness << ") to project "
            << display(project->at("name")) << ".\n";
    });
}

int command_agent_list(Session& session, const Options& options) {
    std::string target = "/api/v1/agents";
    if (!options.all_projects) {
        auto project = resolve_project(session, options);
        if (!project) return session.exit_code();
        target += "?project=" + std::to_string(project->at("id").to_number<std::int64_t>());
    }
    auto answer = session.call("GET", target);
    if (!answer) return session.exit_code();
    auto agents = answer->as_object().at("agents").as_array();
    if (options.json_output) {
        print_json(session.context().out, agents);
        return kExitOk;
    }
    // People read project names, not ids.
    auto projects = names_by_id(session, "/api/v1/projects", "projects");
    if (!projects) return session.exit_code();
    for (auto& agent : agents) show_name(agent.as_object(), "project", *projects);
    print_table(session.context().out, agents,
                {"name", "project", "harness", "network_mode", "allowed_hosts", "account", "goal"});
    return kExitOk;
}

int command_agent_show(Session& session, const Options& options) {
    json::object project;
    auto agent = resolve_agent(session, options, &project);
    if (!agent) return session.exit_code();
    return print_or_json(session, options, *agent,
                         [&](std::ostream& out) { print_agent(session, out, *agent, project); });
}

// `other_ways`: what else the error outside a project suggests (see resolve_project).
int edit_agent(Session& session, const Options& options, std::string_view other_ways = {}) {
    json::object project;
    auto agent = resolve_agent(session, options, &project, other_ways);
    if (!agent) return session.exit_code();
    json::object body;
    if (options.rename) body["name"] = *options.rename;
    if (!options.harness.empty()) body["harness"] = options.harness;
    put_agent_fields(body, options);
    put_host_changes(body, *agent, options);
    put_list_changes(body, *agent, "addons", options.addons, options.remove_addons);
    const auto id = agent->at("id").to_number<std::int64_t>();
    return patch_record(session, options, "/api/v1/agents/" + std::to_string(id), std::move(body),
                        "agent edit", [&](std::ostream& out, json::object updated) {
                            print_agent(session, out, std::move(updated), project);
                        });
}

int command_agent_edit(Session& session, const Options& options) { return edit_agent(session, options); }

int command_agent_rm(Session& session, const Options& options) {
    auto agent = resolve_agent(session, options);
    if (!agent) return session.exit_code();
    const auto id = agent->at("id").to_number<std::int64_t>();
    if (!session.call("DELETE", "/api/v1/agents/" + std::to_string(id)))
        return session.exit_code();
    session.context().out << "Removed agent " << options.name << ".\n";
    return kExitOk;
}

// Needs no daemon: it is what gets one running. The daemon is only asked whether it
// already answers.
int command_setup(Session& session, const Options& options) {
    CliContext& context = session.context();
    if (!context.make_probe) {
        context.err << "handler: setup is not available in this build\n";
        return kExitInternal;
    }
    auto probe = context.make_probe();
    setup::SetupContext setup_context{*probe, context.out, [&context] {
        auto client = context.connect();
        auto answer = client->call("GET", "/api/v1/status", "");
        return answer && answer->status == 200;
    }};
    // The limits check reports the sessions' own settings, read and never rewritten here;
    // a file handlerd would refuse is reported when handlerd starts: the defaults stand in.
    if (auto paths = Paths::from_process_environment())
        if (auto text = read_file(paths->config_file()))
            if (auto parsed = settings::parse(*text, paths->config_file()))
                setup_context.limits = parsed->settings.sessions.limits;
    return setup::run_setup(setup::SetupOptions{options.check_only, options.json_output},
                            setup_context);
}

// ---- handlers: accounts ------------------------------------------------------------

std::optional<std::int64_t> account_id(Session& session, const std::string& name) {
    auto answer = session.call("GET", "/api/v1/accounts");
    if (!answer) return std::nullopt;
    for (const auto& account : answer->as_object().at("accounts").as_array())
        if (account.as_object().at("name").as_string() == name)
            return account.as_object().at("id").to_number<std::int64_t>();
    session.fail("no account named '" + name + "'; `handler account list` shows them");
    return std::nullopt;
}

int send_key(Session& session, std::int64_t id) {
    auto value = read_secret(session.context().input_fd, session.context().err);
    if (!value) return session.fail(value.error().message, kExitUsage);
    json::value body = {{"value", *value}};
    if (!session.call("PUT", "/api/v1/accounts/" + std::to_string(id) + "/secret", &body))
        return session.exit_code();
    return kExitOk;
}

int command_account_add(Session& session, const Options& options) {
    std::string kind = options.kind;
    if (kind.empty()) {
        const auto* picked = secrets::account_kind_for_short_name(options.name);
        if (picked == nullptr)
            return session.fail("give --kind (" + secrets::account_kind_names() + ") for account '" +
                                    options.name + "'",
                                kExitUsage);
        kind = picked->kind;
    }
    // Refused before anything is created: the key would have nowhere to go.
    if (options.key_stdin && secrets::is_local_server(kind))
        return session.fail(kind + " accounts have no key; give --base-url if the server is "
                                   "not at " + std::string(secrets::default_base_url(kind)),
                            kExitUsage);
    json::object body = {{"name", options.name}, {"kind", kind}};
    if (!options.context.empty()) body["context"] = options.context;
    if (options.base_url) body["base_url"] = *options.base_url;
    json::value value = body;
    auto created = session.call("POST", "/api/v1/accounts", &value);
    if (!created) return session.exit_code();
    if (options.key_stdin)
        if (const int code = send_key(session, created->as_object().at("id").to_number<std::int64_t>());
            code != kExitOk)
            return code;
    const auto* base_url = created->as_object().if_contains("base_url");
    session.context().out << "Added account " << options.name << " (" << kind
                          << (options.key_stdin ? ", key stored" : "")
                          << (base_url && base_url->is_string() ? ", " + display(*base_url) : "")
                          << ").\n";
    return kExitOk;
}

int command_account_set_key(Session& session, const Options& options) {
    auto id = account_id(session, options.name);
    if (!id) return session.exit_code();
    if (const int code = send_key(session, *id); code != kExitOk) return code;
    session.context().out << "Stored the key of account " << options.name << ".\n";
    return kExitOk;
}

int command_account_set_url(Session& session, const Options& options) {
    auto id = account_id(session, options.name);
    if (!id) return session.exit_code();
    return patch_record(session, options, "/api/v1/accounts/" + std::to_string(*id),
                        {{"base_url", options.base_url.value_or("")}}, "account set-url");
}

// ---- handlers: the network ---------------------------------------------------------

// `network allow HOST --session ID`: the session's agent's list, or, for a session that
// ran a harness without an agent, its project's list (said so, since that reaches every
// session in the project).
int allow_for_session(Session& session, const Options& options, const std::string& host) {
    auto record = session.call("GET", session_path(options.session_id));
    if (!record) return session.exit_code();
    const auto& fields = record->as_object();
    const auto* agent_id = fields.if_contains("agent");
    const auto project_id = fields.at("project").to_number<std::int64_t>();
    auto project = session.call("GET", "/api/v1/projects/" + std::to_string(project_id));
    if (!project) return session.exit_code();
    if (agent_id == nullptr || agent_id->is_null()) {
        json::object body;
        put_list_changes(body, project->as_object(), "allowed_hosts", {host}, {});
        // Said once the change is made, before the project as it now is.
        return patch_record(session, options, "/api/v1/projects/" + std::to_string(project_id),
                            std::move(body), "network allow", [&](std::ostream& out, json::object updated) {
                                out << "Session " << options.session_id
                                    << " has no agent (it ran a harness directly), so " << host
                                    << " went on the list of its project " << display(updated.at("name"))
                                    << ", which every session in the project may reach.\n";
                                show_times(updated, {"created_at", "updated_at"}, session.clock(),
                                           session.time_zone(), TimeStyle::local_time);
                                print_record(out, updated);
                            });
    }
    const std::string agent_path =
        "/api/v1/agents/" + std::to_string(agent_id->to_number<std::int64_t>());
    auto agent = session.call("GET", agent_path);
    if (!agent) return session.exit_code();
    json::object body;
    put_list_changes(body, agent->as_object(), "allowed_hosts", {host}, {});
    return patch_record(session, options, agent_path, std::move(body), "network allow",
                        [&](std::ostream& out, json::object updated) {
                            print_agent(session, out, std::move(updated), project->as_object());
                        });
}

// `network allow AGENT HOST [--project PATH]` or `network allow HOST --session ID`.
int command_network_allow(Session& session, const Options& options) {
    const bool both = !options.host.empty();
    if (!options.session_id.empty()) {
        if (both || !options.project.empty())
            return session.fail("--session names the agent and the project: give only HOST "
                                "(`handler network allow HOST --session ID`)",
                                kExitUsage);
        if (options.name.empty())
            return session.fail("give the HOST to allow: `handler network allow HOST --session ID`", kExitUsage);
        return allow_for_session(session, options, options.name);
    }
    if (!both)
        return session.fail("give AGENT HOST, or HOST --session ID (the session's agent); "
                            "`handler network learned SESSION` lists what a learning session "
                            "reached",
                            kExitUsage);
    Options allow = options;
    allow.allow_hosts = {options.host};
    return edit_agent(session, allow, ", or --session ID (that session's agent and project)");
}

// ---- the options of each command ---------------------------------------------------

void add_json_flag(CLI::App& command, Options& options) {
    command.add_flag("--json", options.json_output, "Print JSON instead of a table");
}

void add_project_option(CLI::App& command, Options& options) {
    command.add_option("--project", options.project,
                       "Project folder (default: the registered project containing the "
                       "current folder)");
}

void add_detach_keys_option(CLI::App& command, Options& options) {
    command.add_option("--detach-keys", options.detach_keys,
                       "Keys that detach and leave the session running")
        ->capture_default_str();
}

void add_session_id(CLI::App& command, Options& options) {
    command.add_option("ID", options.target, "The session id")->required();
}

void add_agent_name(CLI::App& command, Options& options) {
    command.add_option("NAME", options.name, "The agent")->required();
    add_project_option(command, options);
}

void define_project_add(CLI::App& command, Options& options) {
    command.add_option("PATH", options.path, "The folder")->required()->check(CLI::ExistingDirectory);
    command.add_option("--name", options.name, "Its name (default: folder name)");
    command.add_option("--context", options.context, "Its context");
    command.add_option("--allow", options.allow_hosts,
                       "Host every session in it may reach (repeat): host, *.domain, "
                       "optional :port");
}

void define_project_edit(CLI::App& command, Options& options) {
    command.add_option("PATH", options.project,
                       "Its folder (default: the registered project containing the "
                       "current folder)");
    command.add_option("--rename", options.rename, "New name");
    command.add_option("--context", options.context, "Move it to this context");
    command.add_flag("--no-context", options.clear_context, "Take it out of its context");
    command.add_option("--allow", options.allow_hosts, "Add an allowed host (repeat)");
    command.add_option("--disallow", options.remove_hosts, "Remove an allowed host (repeat)");
    add_json_flag(command, options);
}

void define_agent_add(CLI::App& command, Options& options) {
    command.add_option("NAME", options.name, "Its name, e.g. reviewer")->required();
    command.add_option("--harness", options.harness, "Harness plugin id (see `handler plugins list`)")
        ->required();
    add_project_option(command, options);
    command.add_option("--goal", options.goal, "What it is for");
    command.add_option("--instructions", options.instructions, "Standing instructions");
    command.add_option("--account", options.account, "Account it runs on");
    command.add_option("--network", options.network, "none, filtered or open")
        ->check(CLI::IsMember(network::mode_names(network::ModeHolder::agent)));
    command.add_option("-m,--model", options.session_model,
                       "Model its sessions use unless one says otherwise (the harness's names)");
    command.add_option("--thinking", options.session_thinking,
                       "Thinking level its sessions use unless one says otherwise (the harness's words)");
    command.add_option("--allow", options.allow_hosts,
                       "Allowed host (repeat): host, *.domain, optional :port");
    command.add_option("--addon", options.addons, "Enable an addon plugin (repeat)");
    add_json_flag(command, options);
}

void define_agent_edit(CLI::App& command, Options& options) {
    add_agent_name(command, options);
    command.add_option("--rename", options.rename, "New name");
    command.add_option("--harness", options.harness, "Harness plugin id");
    command.add_option("--goal", options.goal, "What it is for");
    command.add_option("--instructions", options.instructions, "Standing instructions");
    command.add_option("--account", options.account, "Account it runs on");
    command.add_flag("--no-account", options.clear_account, "Run on no account");
    command.add_option("--network", options.network, "none, filtered or open")
        ->check(CLI::IsMember(network::mode_names(network::ModeHolder::agent)));
    auto* model = command.add_option("-m,--model", options.session_model, "Model its sessions use by default");
    command.add_flag("--no-model", options.clear_model, "Its sessions use the harness's default model")
        ->excludes(model);
    auto* thinking =
        command.add_option("--thinking", options.session_thinking, "Thinking level its sessions use by default");
    command.add_flag("--no-thinking", options.clear_thinking, "Its sessions use the harness's default level")
        ->excludes(thinking);
    command.add_option("--allow", options.allow_hosts, "Add an allowed host (repeat)");
    command.add_option("--disallow", options.remove_hosts, "Remove an allowed host (repeat)");
    command.add_option("--addon", options.addons, "Enable an addon plugin (repeat)");
    command.add_option("--remove-addon", options.remove_addons, "Disable an addon plugin (repeat)");
    add_json_flag(command, options);
}

void add_session_settings(CLI::App& command, Options& options);

void define_run(CLI::App& command, Options& options) {
    command.add_option("AGENT", options.target,
                       "An agent's name, or a harness id such as `shell` (default: the "
                       "project's only agent, else the shell)");
    command.add_option("-p,--prompt", options.prompt,
                       "Run headless with this prompt; print the output and exit with the "
                       "harness's status");
    command.add_flag("-d,--detach", options.detach, "Print the session id and return");
    command.add_flag("--json", options.json_output,
                     "With -p: print the session's events as JSON lines (the prompt, message "
                     "chunks, tool calls and their results, the result) instead of the answer");
    add_session_settings(command, options);
    add_detach_keys_option(command, options);
}

// What a session starts with: its network (and so its start mode), model and thinking.
void add_session_settings(CLI::App& command, Options& options) {
    command.add_option("--network", options.session_network,
                       "This session's network: none, filtered, open, or learn (15 minutes "
                       "open, recording what filtered would refuse)")
        ->check(CLI::IsMember(network::mode_names(network::ModeHolder::session)));
    // What each harness's models and levels are is the plugin's to say, not the host's.
    command.add_option("-m,--model", options.session_model,
                       "The model for this session, as its harness names it (`handler plugins "
                       "list --json` shows each harness's models)");
    command.add_option("--thinking", options.session_thinking,
                       "How hard the model thinks, in the harness's own words (`handler plugins "
                       "list --json` shows each harness's levels; another word is refused with "
                       "the harness's list)");
}

void define_chat(CLI::App& command, Options& options) {
    command.add_option("AGENT", options.target,
                       "An agent's name, or a harness id (default: the project's only agent)");
    command.add_option("--session", options.session_id,
                       "Talk in this conversation instead (it is resumed if it has ended), with "
                       "whoever else is in it");
    command.add_flag("--json", options.json_output, "Print the conversation's events as JSON lines");
    add_session_settings(command, options);
}

void define_terminal(CLI::App& command, Options& options) {
    command.add_option("AGENT", options.target, "An agent's name or a harness id")->required();
    command.add_option("ARGS", options.args, "Arguments, after --");
    command.add_flag("-d,--detach", options.detach, "Print the session id and return");
    add_detach_keys_option(command, options);
}

void define_session_answer(CLI::App& command, Options& options) {
    add_session_id(command, options);
    command.add_option("ANSWER", options.answer, "allow, always, reject, an option's number or its id")
        ->required();
    command.add_option("--tool-call", options.tool_call,
                       "Which request (its tool call id); needed when several wait");
}

void define_account_add(CLI::App& command, Options& options) {
    command.add_option("NAME", options.name, "Its name; " + secrets::account_short_names() + " also pick the kind")
        ->required();
    command.add_option("--kind", options.kind, secrets::account_kind_names());
    command.add_option("--context", options.context, "Its context");
    command.add_flag("--api-key-stdin", options.key_stdin, "Read the key from stdin");
    command.add_option("--base-url", options.base_url,
                       secrets::account_kind_names(secrets::Holds::local_server) +
                           ": where the server listens (default " + secrets::local_server_defaults() + ")");
}

void define_network_allow(CLI::App& command, Options& options) {
    // Both optional to CLI11, which fills positionals in order: with --session the one
    // word given is the host (command_network_allow sorts them out).
    command.add_option("AGENT", options.name, "The agent (left out with --session)");
    command.add_option("HOST", options.host, "host, *.domain, optionally :port");
    add_project_option(command, options);
    command.add_option("--session", options.session_id,
                       "A session id (s_...): its agent, in its project, from any folder");
}

// ---- the command table -------------------------------------------------------------

// One row per command, like ninja's kTools: where it sits in the tree, what --help says
// of it, its options (bound to Options) and what runs it. The CLI11 tree, --help and
// the shell completions are all built from these rows, so they cannot disagree.
struct Command {
    std::string_view path; // "status", or a group and a command: "agent add"
    std::string_view description;
    void (*define)(CLI::App& command, Options& options);
    int (*run)(Session& session, const Options& options);
    // False for the commands that work without handlerd (they start it, or need nothing
    // of it); the others report an answer of an unexpected shape as the API's fault.
    bool talks_to_daemon = true;
};

struct Group {
    std::string_view name;
    std::string_view description;
};

const Group kGroups[] = {
    {"plugins", "Harness and addon plugins"},
    {"context", "Contexts: Work, Personal, a client..."},
    {"project", "Project folders agents work in"},
    {"agent", "Agents: a harness with a goal, in a project"},
    {"session", "Sessions: running and ended"},
    {"account", "Accounts: API keys and logins agents run on"},
    {"network", "What sessions reached, and what they may reach"},
};

// `handler ui`: a one-time login link from handlerd (over the unix socket, the only way
// one is made), opened in the browser or printed. The token is in the URL's fragment,
// which a browser never sends to a server; the page trades it for its cookie.
int command_ui(Session& session, const Options& options) {
    const json::value empty = json::object{};
    auto answer = session.call("POST", "/api/v1/ui/login-tokens", &empty);
    if (!answer) return session.exit_code();
    const std::string url(answer->as_object().at("url").as_string());
    auto& out = session.context().out;
    if (options.print_url) {
        out << url << '\n';
        return kExitOk;
    }
    if (session.context().open_url && session.context().open_url(url)) {
        out << "handler: opened the web page in your browser; if it did not appear, open this "
               "link (it works once, for 2 minutes):\n"
            << url << '\n';
        return kExitOk;
    }
    out << "handler: open this link in your browser (it works once, for 2 minutes):\n" << url << '\n';
    return kExitOk;
}

int command_completions(Session& session, const Options& options) {
    CLI::App app{"", "handler"};
    define_commands(app);
    session.context().out << generate_completions(app, options.shell);
    return kExitOk;
}

const Command kCommands[] = {
    {"daemon", "Run handlerd in the foreground",
     [](CLI::App& command, Options& options) {
         command.add_flag("-v,--verbose", options.verbosity,
                          "More log output (repeat for more); overrides [daemon] log_level");
     },
     [](Session& session, const Options& options) {
         return session.context().run_daemon(DaemonCommand{options.verbosity});
     },
     false},
    {"acp", "Speak ACP on stdin/stdout: an editor (Zed...) drives the project's agent in its container",
     [](CLI::App& command, Options& options) {
         command.add_option("--agent", options.name, "The agent to start conversations with (default: the project's only one)");
         command.add_flag("-v,--verbose", options.verbosity, "More log lines on stderr (repeat for more)");
     },
     [](Session& session, const Options& options) {
         if (!session.context().run_acp) return session.fail("handler acp is not available in this build", kExitUsage);
         return session.context().run_acp(AcpCommand{options.name, options.verbosity});
     },
     false},
    {"status", "Show whether handlerd runs, and its state", add_json_flag, command_status},
    {"ui", "Open the web page in your browser, logged in by a one-time link",
     [](CLI::App& command, Options& options) {
         command.add_flag("--print-url", options.print_url,
                          "Only print the link (it works once, for 2 minutes)");
     },
     command_ui},
    {"plugins list", "List plugins: loaded, refused, failed", add_json_flag, command_plugins_list},
    {"context add", "Add a context",
     [](CLI::App& command, Options& options) {
         command.add_option("NAME", options.name, "Its name")->required();
     },
     command_context_add},
    {"context list", "List contexts", add_json_flag,
     [](Session& session, const Options& options) {
         return command_list(session, options, "/api/v1/contexts", "contexts", {"id", "name"});
     }},
    {"project add", "Register a project folder", define_project_add, command_project_add},
    {"project list", "List projects", add_json_flag,
     [](Session& session, const Options& options) {
         return command_list(session, options, "/api/v1/projects", "projects",
                             {"id", "name", "context", "path", "allowed_hosts"});
     }},
    {"project edit", "Change a project", define_project_edit, command_project_edit},
    {"agent add", "Add an agent to a project", define_agent_add, command_agent_add},
    {"agent list", "List the project's agents",
     [](CLI::App& command, Options& options) {
         add_project_option(command, options);
         command.add_flag("--all", options.all_projects, "Agents of every project");
         add_json_flag(command, options);
     },
     command_agent_list},
    {"agent show", "Show one agent",
     [](CLI::App& command, Options& options) {
         add_agent_name(command, options);
         add_json_flag(command, options);
     },
     command_agent_show},
    {"agent edit", "Change an agent", define_agent_edit, command_agent_edit},
    {"agent rm", "Remove an agent", add_agent_name, command_agent_rm},
    {"setup",
     "Check this machine for rootless podman, fix your own container settings, "
     "start handlerd (safe to run again)",
     [](CLI::App& command, Options& options) {
         command.add_flag("--check", options.check_only,
                          "Only check and report: write, reset and start nothing");
         add_json_flag(command, options);
     },
     command_setup, false},
    {"run", "Start a session in the project of the current folder and attach to it", define_run,
     [](Session& session, const Options& options) { return command_run(session, options, false); }},
    {"terminal", "Start an interactive session with arguments for the harness's program",
     define_terminal,
     [](Session& session, const Options& options) { return command_run(session, options, true); }},
    {"chat", "Talk with an agent at the terminal: a conversation of prompt after prompt", define_chat,
     command_chat},
    {"attach", "Attach to a running session's terminal",
     [](CLI::App& command, Options& options) {
         command.add_option("ID", options.target, "The session id (s_...)")->required();
         add_detach_keys_option(command, options);
         command.add_flag("--read-only", options.read_only, "Watch without typing");
     },
     command_attach},
    {"logs", "Print a session's output",
     [](CLI::App& command, Options& options) {
         add_session_id(command, options);
         command.add_flag("-f,--follow", options.follow, "Keep printing until the session ends");
     },
     command_logs},
    {"session list", "List sessions, oldest first: their agent, project and when they started",
     add_json_flag, command_session_list},
    {"session show", "Show one session, with the hosts it may reach besides its agent's and project's lists",
     [](CLI::App& command, Options& options) {
         add_session_id(command, options);
         add_json_flag(command, options);
     },
     command_session_show},
    {"session stop", "Stop a session (SIGTERM, then SIGKILL)", add_session_id, command_session_stop},
    {"session events", "A headless run's events: the prompt, messages, tool calls and results, the result",
     [](CLI::App& command, Options& options) {
         add_session_id(command, options);
         add_json_flag(command, options);
         command.add_flag("-f,--follow", options.follow, "Keep printing until the session ends");
     },
     command_session_events},
    {"session changes",
     "What a session changed in its project: files, and with --diff their diffs against git HEAD "
     "(computed in a container that mounts the project read-only)",
     [](CLI::App& command, Options& options) {
         add_session_id(command, options);
         command.add_flag("--diff", options.show_diff, "Print each file's diff after the list");
         add_json_flag(command, options);
     },
     command_session_changes},
    {"session answer", "Answer a harness's permission request (a tool call it asks to make)",
     define_session_answer, command_session_answer},
    {"session prompt", "Send a prompt to a conversation (it waits while a turn runs)",
     [](CLI::App& command, Options& options) {
         add_session_id(command, options);
         command.add_option("TEXT", options.prompt, "The prompt (may be empty when it has images)")->required();
         command.add_option("--image", options.images,
                            "An image file (PNG, JPEG, GIF or WebP) for a harness that takes images; repeatable")
             ->check(CLI::ExistingFile);
         add_json_flag(command, options);
     },
     command_session_prompt},
    {"session cancel", "Interrupt the running turn of a conversation; it stays usable", add_session_id,
     command_session_cancel},
    {"session resume", "Start a stopped or ended conversation again, where its harness left it", add_session_id,
     command_session_resume},
    {"session rm", "Remove an ended session and its output",
     [](CLI::App& command, Options& options) {
         add_session_id(command, options);
         command.add_flag("-f,--force", options.force, "Stop it first if it still runs");
     },
     command_session_rm},
    {"account add", "Add an account; its key is read from stdin, never from the command line",
     define_account_add, command_account_add},
    {"account list", "List accounts (never their keys)", add_json_flag,
     [](Session& session, const Options& options) {
         return command_list(session, options, "/api/v1/accounts", "accounts",
                             {"name", "kind", "context", "has_secret", "base_url"});
     }},
    {"account set-key", "Replace an account's key (stdin)",
     [](CLI::App& command, Options& options) {
         command.add_option("NAME", options.name, "The account")->required();
     },
     command_account_set_key},
    {"account set-url", "Change where an ollama or llama-cpp account's server listens",
     [](CLI::App& command, Options& options) {
         command.add_option("NAME", options.name, "The account")->required();
         command.add_option("URL", options.base_url, "Like http://127.0.0.1:11434")->required();
     },
     command_account_set_url},
    {"network log", "Every connection a session made or tried",
     [](CLI::App& command, Options& options) {
         command.add_option("SESSION", options.target, "The session id")->required();
         command.add_flag("-f,--follow", options.follow, "Keep printing until the session ends");
         add_json_flag(command, options);
     },
     command_network_log},
    {"network learned", "Hosts a learning session reached that filtered mode would refuse",
     [](CLI::App& command, Options& options) {
         command.add_option("SESSION", options.target, "The session id")->required();
         add_json_flag(command, options);
     },
     command_network_learned},
    {"network learn",
     "Let a running session reach every public host for a while (15 minutes), recording what "
     "filtered mode would refuse; --stop ends it",
     [](CLI::App& command, Options& options) {
         command.add_option("SESSION", options.target, "The session id")->required();
         command.add_option("--minutes", options.minutes, "How long it learns, 1 to 120 (default 15)");
         command.add_flag("--stop", options.stop_learning, "Stop learning: the session is filtered again");
         add_json_flag(command, options);
     },
     command_network_learn},
    {"network allow",
     "Add a host to an agent's allow-list (AGENT HOST, or HOST --session ID); running "
     "sessions use it at once",
     define_network_allow, command_network_allow},
    {"completions", "Print shell completions",
     [](CLI::App& command, Options& options) {
         command.add_option("SHELL", options.shell, "bash, zsh or fish")
             ->required()
             ->check(CLI::IsMember({"bash", "zsh", "fish"}));
     },
     command_completions, false},
};

struct Defined {
    CLI::App* node;
    const Command* command;
};

// The CLI11 tree of kCommands, each group made where its first command appears (the
// order of --help), with `options` as the storage of every option.
std::vector<Defined> define(CLI::App& app, Options& options) {
    app.description("Handler: coding agents in rootless containers");
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("handler ") + HANDLER_VERSION);
    std::map<std::string_view, CLI::App*> groups;
    std::vector<Defined> defined;
    for (const Command& command : kCommands) {
        CLI::App* parent = &app;
        std::string_view name = command.path;
        if (const auto space = name.find(' '); space != std::string_view::npos) {
            const std::string_view group = name.substr(0, space);
            name.remove_prefix(space + 1);
            auto& group_node = groups[group];
            if (group_node == nullptr) {
                const auto* known = std::find_if(std::begin(kGroups), std::end(kGroups),
                                                 [group](const Group& entry) { return entry.name == group; });
                group_node = app.add_subcommand(std::string(group),
                                                known != std::end(kGroups) ? std::string(known->description)
                                                                           : std::string());
                group_node->require_subcommand(1);
            }
            parent = group_node;
        }
        CLI::App* node = parent->add_subcommand(std::string(name), std::string(command.description));
        command.define(*node, options);
        defined.push_back({node, &command});
    }
    return defined;
}

} // namespace

void define_commands(CLI::App& app) {
    // The options' storage must outlive the App; completions only read the tree.
    static Options unused;
    define(app, unused);
}

int run_cli(const std::vector<std::string>& arguments, CliContext& context) {
    CLI::App app{"", "handler"};
    Options options;
    const auto commands = define(app, options);

    // CLI11 takes the arguments in reverse order.
    std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error, context.out, context.err);
        return code == 0 ? kExitOk : kExitUsage;
    }

    Session session(context);
    for (const auto& [node, command] : commands) {
        if (!node->parsed()) continue;
        if (!command->talks_to_daemon) return command->run(session, options);
        try {
            return command->run(session, options);
        } catch (const std::exception& error) {
            // A well-formed answer of an unexpected shape (a field missing or of another
            // type): the daemon and the CLI disagree about the API.
            context.err << "handler: unexpected answer from handlerd: " << error.what() << '\n';
            return kExitInternal;
        }
    }
    context.err << "handler: no command given; see `handler --help`\n";
    return kExitUsage;
}

} // namespace handler::cli
