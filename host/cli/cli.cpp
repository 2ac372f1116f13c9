#include "cli/cli.hpp"

#include "cli/completions.hpp"
#include "cli/output.hpp"
#include "cli/permissions.hpp"
#include "cli/terminal.hpp"
#include "network/network_mode.hpp"
#include "secrets/account_kinds.hpp"
#include "setup/setup.hpp"
#include "store/validation.hpp"

#include <boost/json.hpp>
#include <fcntl.h>
#include <unistd.h>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

namespace handler::cli {
namespace json = boost::json;

namespace {

// Every value a command line can carry, bound to the CLI11 tree by define().
struct Options {
    bool json_output = false;
    int verbosity = 0;

    std::string name;
    std::string path;
    std::string context;
    std::string project;
    std::string harness;
    std::optional<std::string> goal;
    std::optional<std::string> instructions;
    std::optional<std::string> account;
    std::optional<std::string> network;
    std::optional<std::string> rename;
    std::vector<std::string> allow_hosts;
    std::vector<std::string> remove_hosts;
    std::vector<std::string> addons;
    std::vector<std::string> remove_addons;
    bool clear_account = false;
    bool clear_context = false;
    bool all_projects = false;
    bool check_only = false;
    std::string shell;

    // Sessions.
    std::string target; // run/terminal: agent or harness; attach/logs/stop/rm: session id
    std::optional<std::string> prompt;
    std::vector<std::string> args;
    bool detach = false;
    std::string detach_keys = "ctrl-p,ctrl-q";
    bool follow = false;
    bool force = false;
    bool read_only = false;
    std::optional<std::string> session_network;
    std::optional<std::string> session_model;
    std::optional<std::string> session_thinking;
    std::string host;
    std::string kind;
    bool key_stdin = false;
    std::optional<std::string> base_url;
    std::string answer;    // session answer: an option, its number, or allow/always/reject
    std::string tool_call; // session answer --tool-call
};

struct Tree {
    CLI::App* daemon = nullptr;
    CLI::App* status = nullptr;
    CLI::App* plugins_list = nullptr;
    CLI::App* context_add = nullptr;
    CLI::App* context_list = nullptr;
    CLI::App* project_add = nullptr;
    CLI::App* project_list = nullptr;
    CLI::App* project_edit = nullptr;
    CLI::App* agent_add = nullptr;
    CLI::App* agent_list = nullptr;
    CLI::App* agent_show = nullptr;
    CLI::App* agent_edit = nullptr;
    CLI::App* agent_rm = nullptr;
    CLI::App* completions = nullptr;
    CLI::App* setup = nullptr;
    CLI::App* run = nullptr;
    CLI::App* terminal = nullptr;
    CLI::App* attach = nullptr;
    CLI::App* logs = nullptr;
    CLI::App* session_list = nullptr;
    CLI::App* session_show = nullptr;
    CLI::App* session_stop = nullptr;
    CLI::App* session_rm = nullptr;
    CLI::App* session_events = nullptr;
    CLI::App* session_answer = nullptr;
    CLI::App* account_add = nullptr;
    CLI::App* account_list = nullptr;
    CLI::App* account_set_key = nullptr;
    CLI::App* account_set_url = nullptr;
    CLI::App* network_log = nullptr;
    CLI::App* network_learned = nullptr;
    CLI::App* network_allow = nullptr;
};

void add_json_flag(CLI::App* command, Options& options) {
    command->add_flag("--json", options.json_output, "Print JSON instead of a table");
}

void add_project_option(CLI::App* command, Options& options) {
    command->add_option("--project", options.project,
                        "Project folder (default: the registered project containing the "
                        "current folder)");
}

Tree define(CLI::App& app, Options& options) {
    app.description("Handler: coding agents in rootless containers");
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("handler ") + HANDLER_VERSION);
    Tree tree;

    tree.daemon = app.add_subcommand("daemon", "Run handlerd in the foreground");
    tree.daemon->add_flag("-v,--verbose", options.verbosity,
                          "More log output (repeat for more); overrides [daemon] log_level");

    tree.status = app.add_subcommand("status", "Show whether handlerd runs, and its state");
    add_json_flag(tree.status, options);

    auto* plugins = app.add_subcommand("plugins", "Harness and addon plugins");
    plugins->require_subcommand(1);
    tree.plugins_list = plugins->add_subcommand("list", "List plugins: loaded, refused, failed");
    add_json_flag(tree.plugins_list, options);

    auto* context = app.add_subcommand("context", "Contexts: Work, Personal, a client...");
    context->require_subcommand(1);
    tree.context_add = context->add_subcommand("add", "Add a context");
    tree.context_add->add_option("NAME", options.name, "Its name")->required();
    tree.context_list = context->add_subcommand("list", "List contexts");
    add_json_flag(tree.context_list, options);

    auto* project = app.add_subcommand("project", "Project folders agents work in");
    project->require_subcommand(1);
    tree.project_add = project->add_subcommand("add", "Register a project folder");
    tree.project_add->add_option("PATH", options.path, "The folder")
        ->required()
        ->check(CLI::ExistingDirectory);
    tree.project_add->add_option("--name", options.name, "Its name (default: folder name)");
    tree.project_add->add_option("--context", options.context, "Its context");
    tree.project_add->add_option("--allow", options.allow_hosts,
                                 "Host every session in it may reach (repeat): host, *.domain, "
                                 "optional :port");
    tree.project_list = project->add_subcommand("list", "List projects");
    add_json_flag(tree.project_list, options);
    tree.project_edit = project->add_subcommand("edit", "Change a project");
    tree.project_edit->add_option("PATH", options.project,
                                  "Its folder (default: the registered project containing the "
                                  "current folder)");
    tree.project_edit->add_option("--rename", options.rename, "New name");
    tree.project_edit->add_option("--context", options.context, "Move it to this context");
    tree.project_edit->add_flag("--no-context", options.clear_context,
                                "Take it out of its context");
    tree.project_edit->add_option("--allow", options.allow_hosts, "Add an allowed host (repeat)");
    tree.project_edit->add_option("--disallow", options.remove_hosts,
                                  "Remove an allowed host (repeat)");
    add_json_flag(tree.project_edit, options);

    auto* agent = app.add_subcommand("agent", "Agents: a harness with a goal, in a project");
    agent->require_subcommand(1);

    tree.agent_add = agent->add_subcommand("add", "Add an agent to a project");
    tree.agent_add->add_option("NAME", options.name, "Its name, e.g. reviewer")->required();
    tree.agent_add->add_option("--harness", options.harness,
                               "Harness plugin id (see `handler plugins list`)")
        ->required();
    add_project_option(tree.agent_add, options);
    tree.agent_add->add_option("--goal", options.goal, "What it is for");
    tree.agent_add->add_option("--instructions", options.instructions,
                               "Standing instructions");
    tree.agent_add->add_option("--account", options.account, "Account it runs on");
    tree.agent_add->add_option("--network", options.network, "none, filtered or open")
        ->check(CLI::IsMember(network::mode_names(network::ModeHolder::agent)));
    tree.agent_add->add_option("--allow", options.allow_hosts,
                               "Allowed host (repeat): host, *.domain, optional :port");
    tree.agent_add->add_option("--addon", options.addons, "Enable an addon plugin (repeat)");
    add_json_flag(tree.agent_add, options);

    tree.agent_list = agent->add_subcommand("list", "List the project's agents");
    add_project_option(tree.agent_list, options);
    tree.agent_list->add_flag("--all", options.all_projects, "Agents of every project");
    add_json_flag(tree.agent_list, options);

    tree.agent_show = agent->add_subcommand("show", "Show one agent");
    tree.agent_show->add_option("NAME", options.name, "The agent")->required();
    add_project_option(tree.agent_show, options);
    add_json_flag(tree.agent_show, options);

    tree.agent_edit = agent->add_subcommand("edit", "Change an agent");
    tree.agent_edit->add_option("NAME", options.name, "The agent")->required();
    add_project_option(tree.agent_edit, options);
    tree.agent_edit->add_option("--rename", options.rename, "New name");
    tree.agent_edit->add_option("--harness", options.harness, "Harness plugin id");
    tree.agent_edit->add_option("--goal", options.goal, "What it is for");
    tree.agent_edit->add_option("--instructions", options.instructions,
                                "Standing instructions");
    tree.agent_edit->add_option("--account", options.account, "Account it runs on");
    tree.agent_edit->add_flag("--no-account", options.clear_account, "Run on no account");
    tree.agent_edit->add_option("--network", options.network, "none, filtered or open")
        ->check(CLI::IsMember(network::mode_names(network::ModeHolder::agent)));
    tree.agent_edit->add_option("--allow", options.allow_hosts, "Add an allowed host (repeat)");
    tree.agent_edit->add_option("--disallow", options.remove_hosts,
                                "Remove an allowed host (repeat)");
    tree.agent_edit->add_option("--addon", options.addons, "Enable an addon plugin (repeat)");
    tree.agent_edit->add_option("--remove-addon", options.remove_addons, "Disable an addon plugin (repeat)");
    add_json_flag(tree.agent_edit, options);

    tree.agent_rm = agent->add_subcommand("rm", "Remove an agent");
    tree.agent_rm->add_option("NAME", options.name, "The agent")->required();
    add_project_option(tree.agent_rm, options);

    tree.setup = app.add_subcommand(
        "setup", "Check this machine for rootless podman, fix your own container settings, "
                 "start handlerd (safe to run again)");
    tree.setup->add_flag("--check", options.check_only,
                         "Only check and report: write, reset and start nothing");
    add_json_flag(tree.setup, options);

    tree.run = app.add_subcommand(
        "run", "Start a session in the project of the current folder and attach to it");
    tree.run->add_option("AGENT", options.target,
                         "An agent's name, or a harness id such as `shell` (default: the "
                         "project's only agent, else the shell)");
    tree.run->add_option("-p,--prompt", options.prompt,
                         "Run headless with this prompt; print the output and exit with the "
                         "harness's status");
    tree.run->add_flag("-d,--detach", options.detach, "Print the session id and return");
    tree.run->add_flag("--json", options.json_output,
                       "With -p: print the session's events as JSON lines (the prompt, message "
                       "chunks, tool calls and their results, the result) instead of the answer");
    tree.run->add_option("--network", options.session_network,
                         "This session's network: none, filtered, open, or learn (15 minutes "
                         "open, recording what filtered would refuse)")
        ->check(CLI::IsMember(network::mode_names(network::ModeHolder::session)));
    tree.run->add_option("-m,--model", options.session_model,
                         "The model for this session, as the harness names it (claude: sonnet, "
                         "opus; codex: gpt-5.1-codex; pi: anthropic/claude-sonnet-4-5)");
    tree.run->add_option("--thinking", options.session_thinking,
                         "How hard the model thinks, in the harness's own words (docs/harnesses.md; "
                         "another word is refused with the harness's list)");
    tree.run->add_option("--detach-keys", options.detach_keys,
                         "Keys that detach and leave the session running")
        ->capture_default_str();

    tree.terminal = app.add_subcommand(
        "terminal", "Start an interactive session with arguments for the harness's program");
    tree.terminal->add_option("AGENT", options.target, "An agent's name or a harness id")
        ->required();
    tree.terminal->add_option("ARGS", options.args, "Arguments, after --");
    tree.terminal->add_flag("-d,--detach", options.detach, "Print the session id and return");
    tree.terminal->add_option("--detach-keys", options.detach_keys,
                              "Keys that detach and leave the session running")
        ->capture_default_str();

    tree.attach = app.add_subcommand("attach", "Attach to a running session's terminal");
    tree.attach->add_option("ID", options.target, "The session id (s_...)")->required();
    tree.attach->add_option("--detach-keys", options.detach_keys,
                            "Keys that detach and leave the session running")
        ->capture_default_str();
    tree.attach->add_flag("--read-only", options.read_only, "Watch without typing");

    tree.logs = app.add_subcommand("logs", "Print a session's output");
    tree.logs->add_option("ID", options.target, "The session id")->required();
    tree.logs->add_flag("-f,--follow", options.follow, "Keep printing until the session ends");

    auto* session = app.add_subcommand("session", "Sessions: running and ended");
    session->require_subcommand(1);
    tree.session_list = session->add_subcommand("list", "List sessions");
    add_json_flag(tree.session_list, options);
    tree.session_show = session->add_subcommand(
        "show", "Show one session, with the hosts it may reach besides its agent's and project's lists");
    tree.session_show->add_option("ID", options.target, "The session id")->required();
    add_json_flag(tree.session_show, options);
    tree.session_stop = session->add_subcommand("stop", "Stop a session (SIGTERM, then SIGKILL)");
    tree.session_stop->add_option("ID", options.target, "The session id")->required();
    tree.session_events = session->add_subcommand(
        "events", "A headless run's events: the prompt, messages, tool calls and results, the result");
    tree.session_events->add_option("ID", options.target, "The session id")->required();
    add_json_flag(tree.session_events, options);
    tree.session_events->add_flag("-f,--follow", options.follow, "Keep printing until the session ends");
    tree.session_answer = session->add_subcommand(
        "answer", "Answer a harness's permission request (a tool call it asks to make)");
    tree.session_answer->add_option("ID", options.target, "The session id")->required();
    tree.session_answer->add_option("ANSWER", options.answer,
                                    "allow, always, reject, an option's number or its id")
        ->required();
    tree.session_answer->add_option("--tool-call", options.tool_call,
                                    "Which request (its tool call id); needed when several wait");
    tree.session_rm = session->add_subcommand("rm", "Remove an ended session and its output");
    tree.session_rm->add_option("ID", options.target, "The session id")->required();
    tree.session_rm->add_flag("-f,--force", options.force, "Stop it first if it still runs");

    auto* account = app.add_subcommand("account", "Accounts: API keys and logins agents run on");
    account->require_subcommand(1);
    tree.account_add = account->add_subcommand(
        "add", "Add an account; its key is read from stdin, never from the command line");
    tree.account_add->add_option("NAME", options.name,
                                 "Its name; " + secrets::account_short_names() + " also pick the kind")
        ->required();
    tree.account_add->add_option("--kind", options.kind, secrets::account_kind_names());
    tree.account_add->add_option("--context", options.context, "Its context");
    tree.account_add->add_flag("--api-key-stdin", options.key_stdin, "Read the key from stdin");
    tree.account_add->add_option("--base-url", options.base_url,
                                 secrets::account_kind_names(secrets::Holds::local_server) +
                                     ": where the server listens (default " +
                                     secrets::local_server_defaults() + ")");
    tree.account_list = account->add_subcommand("list", "List accounts (never their keys)");
    add_json_flag(tree.account_list, options);
    tree.account_set_key = account->add_subcommand("set-key", "Replace an account's key (stdin)");
    tree.account_set_key->add_option("NAME", options.name, "The account")->required();
    tree.account_set_url = account->add_subcommand(
        "set-url", "Change where a local server's account (" +
                       secrets::account_kind_names(secrets::Holds::local_server) + ") points");
    tree.account_set_url->add_option("NAME", options.name, "The account")->required();
    tree.account_set_url->add_option("URL", options.base_url, "Like http://127.0.0.1:11434")
        ->required();

    auto* network = app.add_subcommand("network", "What sessions reached, and what they may reach");
    network->require_subcommand(1);
    tree.network_log = network->add_subcommand("log", "Every connection a session made or tried");
    tree.network_log->add_option("SESSION", options.target, "The session id")->required();
    tree.network_log->add_flag("-f,--follow", options.follow, "Keep printing until the session ends");
    add_json_flag(tree.network_log, options);
    tree.network_learned = network->add_subcommand(
        "learned", "Hosts a learning session reached that filtered mode would refuse");
    tree.network_learned->add_option("SESSION", options.target, "The session id")->required();
    add_json_flag(tree.network_learned, options);
    tree.network_allow = network->add_subcommand(
        "allow", "Add a host to an agent's allow-list; running sessions use it at once");
    tree.network_allow->add_option("AGENT", options.name, "The agent")->required();
    tree.network_allow->add_option("HOST", options.host, "host, *.domain, optionally :port")->required();
    add_project_option(tree.network_allow, options);

    tree.completions = app.add_subcommand("completions", "Print shell completions");
    tree.completions->add_option("SHELL", options.shell, "bash, zsh or fish")
        ->required()
        ->check(CLI::IsMember({"bash", "zsh", "fish"}));
    return tree;
}

std::string url_encode(std::string_view text) {
    return boost::urls::encode(text, boost::urls::unreserved_chars);
}

// One conversation with handlerd: turns transport failures and error answers into the
// message and exit code the user sees.
class Session {
public:
    explicit Session(CliContext& context) : context_(context) {}

    std::optional<json::value> call(std::string_view method, std::string_view target,
                                    const json::value* body = nullptr) {
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

    int fail(std::string_view message, int code = kExitRefused) {
        context_.err << "handler: " << message << '\n';
        exit_code_ = code;
        return code;
    }

    int exit_code() const { return exit_code_; }
    CliContext& context() { return context_; }

private:
    CliContext& context_;
    std::unique_ptr<ApiClient> client_;
    int exit_code_ = kExitOk;
};

// The project a command is about: --project, else the registered project that
// contains the current folder (like git finds its repository).
std::optional<json::object> resolve_project(Session& session, const Options& options) {
    std::filesystem::path folder =
        options.project.empty() ? session.context().current_dir
                                : std::filesystem::absolute(options.project);
    auto answer = session.call("GET", "/api/v1/projects?path=" + url_encode(folder.string()));
    if (!answer) return std::nullopt;
    const auto& projects = answer->as_object().at("projects").as_array();
    if (projects.empty()) {
        session.fail("no registered project contains " + folder.string() +
                     "; register it with `handler project add " + folder.string() +
                     "` or pass --project");
        return std::nullopt;
    }
    return projects.front().as_object();
}

std::optional<json::object> resolve_agent(Session& session, const Options& options,
                                          json::object* project_out = nullptr) {
    auto project = resolve_project(session, options);
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

int print_or_json(Session& session, const Options& options, const json::value& value,
                  const std::function<void(std::ostream&)>& human) {
    if (options.json_output)
        print_json(session.context().out, value);
    else
        human(session.context().out);
    return kExitOk;
}

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

int command_list(Session& session, const Options& options, std::string_view target,
                 std::string_view key, const std::vector<std::string>& columns) {
    auto answer = session.call("GET", target);
    if (!answer) return session.exit_code();
    const auto& items = answer->as_object().at(key).as_array();
    return print_or_json(session, options, items,
                         [&](std::ostream& out) { print_table(out, items, columns); });
}

int command_context_add(Session& session, const Options& options) {
    json::value body = {{"name", options.name}};
    auto created = session.call("POST", "/api/v1/contexts", &body);
    if (!created) return session.exit_code();
    session.context().out << "Added context " << options.name << ".\n";
    return kExitOk;
}

json::array host_list(const std::vector<std::string>& hosts) {
    json::array out;
    for (const auto& host : hosts) out.emplace_back(host);
    return out;
}

// Entries added to and removed from the list `field` of `record`, into `body`: the API
// replaces a whole list.
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

// --allow and --disallow applied to the allowed_hosts of `record` (an agent or a project).
void put_host_changes(json::object& body, const json::object& record, const Options& options) {
    put_list_changes(body, record, "allowed_hosts", options.allow_hosts, options.remove_hosts);
}

// Sends the changes in `body` to `target` and prints the record handlerd answers.
int patch_record(Session& session, const Options& options, const std::string& target,
                 json::object body, std::string_view command) {
    if (body.empty())
        return session.fail("nothing to change; see `handler " + std::string(command) +
                                " --help`",
                            kExitUsage);
    json::value value = std::move(body);
    auto updated = session.call("PATCH", target, &value);
    if (!updated) return session.exit_code();
    return print_or_json(session, options, *updated,
                         [&](std::ostream& out) { print_record(out, updated->as_object()); });
}

int command_project_add(Session& session, const Options& options) {
    json::object body = {{"path", std::filesystem::absolute(options.path).string()}};
    if (!options.name.empty()) body["name"] = options.name;
    if (!options.context.empty()) body["context"] = options.context;
    if (!options.allow_hosts.empty()) body["allowed_hosts"] = host_list(options.allow_hosts);
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
}

int command_agent_add(Session& session, const Options& options) {
    auto project = resolve_project(session, options);
    if (!project) return session.exit_code();
    json::object body = {{"name", options.name},
                         {"project", project->at("id")},
                         {"harness", options.harness}};
    put_agent_fields(body, options);
    if (!options.allow_hosts.empty()) body["allowed_hosts"] = host_list(options.allow_hosts);
    if (!options.addons.empty()) body["addons"] = host_list(options.addons);
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
    auto projects = session.call("GET", "/api/v1/projects");
    if (!projects) return session.exit_code();
    for (auto& agent : agents)
        for (const auto& project : projects->as_object().at("projects").as_array())
            if (project.as_object().at("id") == agent.as_object().at("project"))
                agent.as_object()["project"] = project.as_object().at("name");
    print_table(session.context().out, agents,
                {"name", "project", "harness", "network_mode", "allowed_hosts", "account", "goal"});
    return kExitOk;
}

int command_agent_show(Session& session, const Options& options) {
    auto agent = resolve_agent(session, options);
    if (!agent) return session.exit_code();
    return print_or_json(session, options, *agent,
                         [&](std::ostream& out) { print_record(out, *agent); });
}

int command_agent_edit(Session& session, const Options& options) {
    auto agent = resolve_agent(session, options);
    if (!agent) return session.exit_code();
    json::object body;
    if (options.rename) body["name"] = *options.rename;
    if (!options.harness.empty()) body["harness"] = options.harness;
    put_agent_fields(body, options);
    put_host_changes(body, *agent, options);
    put_list_changes(body, *agent, "addons", options.addons, options.remove_addons);
    const auto id = agent->at("id").to_number<std::int64_t>();
    return patch_record(session, options, "/api/v1/agents/" + std::to_string(id),
                        std::move(body), "agent edit");
}

// Needs no daemon: it is what gets one running. The daemon is only asked whether it
// already answers.
int command_setup(CliContext& context, const Options& options) {
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
    return setup::run_setup(setup::SetupOptions{options.check_only, options.json_output},
                            setup_context);
}

int command_agent_rm(Session& session, const Options& options) {
    auto agent = resolve_agent(session, options);
    if (!agent) return session.exit_code();
    const auto id = agent->at("id").to_number<std::int64_t>();
    if (!session.call("DELETE", "/api/v1/agents/" + std::to_string(id)))
        return session.exit_code();
    session.context().out << "Removed agent " << options.name << ".\n";
    return kExitOk;
}

// ---- sessions ----------------------------------------------------------------------

std::string session_path(const std::string& id) { return "/api/v1/sessions/" + url_encode(id); }

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

// Attaches and runs until the session ends or the user detaches; the exit code is the
// program's when it exited.
// A headless run's events: with --json each is a JSON line; otherwise the result's text
// is the answer. A harness whose stdout is structured (its JSON, for machines) has its
// stdout left out; a plain one's is printed as it comes, as before.
struct HeadlessPrinter {
    CliContext& context;
    bool json_lines = false;
    bool structured = false;
    // A harness asks before it acts / a request was answered (by anyone).
    std::function<void(const json::object& request)> on_request;
    std::function<void(const std::string& tool_call)> on_answer;
    // The run's result said it failed (a harness whose program outlives its turns, like
    // Codex's app server, exits 0 anyway).
    mutable bool failed = false;

    void output(api::OutputStream stream, std::string_view bytes) const {
        if (stream == api::OutputStream::stdout_ && (structured || json_lines)) return;
        write_output(context, stream, bytes);
    }

    void event(const json::object& message) const {
        const auto* event_kind = message.if_contains("kind");
        const auto* event_payload = message.if_contains("payload");
        if (event_kind != nullptr && event_payload != nullptr && event_payload->is_object()) {
            const auto* is_error = event_payload->as_object().if_contains("isError");
            if (*event_kind == "result") failed = is_error != nullptr && is_error->is_bool() && is_error->as_bool();
            if (*event_kind == "permission_request" && on_request) on_request(event_payload->as_object());
            const auto* call = event_payload->as_object().if_contains("toolCallId");
            if (*event_kind == "permission_answer" && on_answer && call != nullptr && call->is_string())
                on_answer(std::string(call->as_string()));
        }
        if (json_lines) {
            json::object line = message;
            line.erase("type");
            write_output(context, api::OutputStream::stdout_, json::serialize(line) + "\n");
            return;
        }
        const auto* kind = message.if_contains("kind");
        const auto* payload = message.if_contains("payload");
        if (!structured || kind == nullptr || payload == nullptr || !payload->is_object()) return;
        // The answer goes to stdout, what went wrong to stderr (the harness's own stderr
        // passes through too). A failed turn's result repeats its error, so it is left out.
        const json::object& fields = payload->as_object();
        const auto print = [&](api::OutputStream stream, const char* field) {
            const auto* text = fields.if_contains(field);
            if (text == nullptr || !text->is_string() || text->as_string().empty()) return;
            std::string line(text->as_string());
            if (line.back() != '\n') line += '\n';
            write_output(context, stream, line);
        };
        if (*kind == "error") {
            print(api::OutputStream::stderr_, "message");
        } else if (*kind == "result") {
            const auto* is_error = fields.if_contains("isError");
            if (is_error == nullptr || !is_error->is_bool() || !is_error->as_bool()) print(api::OutputStream::stdout_, "result");
        }
    }
};

int attach_to(Session& session, const std::string& id, const Options& options,
              std::string_view query, bool with_input, bool session_tty,
              HeadlessPrinter* headless = nullptr) {
    CliContext& context = session.context();
    // A keyboard only means raw mode and detach keys for a session with a terminal; a
    // headless run reads our stdin as its own.
    const bool keyboard = with_input && session_tty && context.input_fd >= 0 &&
                          ::isatty(context.input_fd) != 0;
    auto keys = DetachKeys::parse(keyboard ? options.detach_keys : std::string());
    if (!keys) return session.fail(keys.error().message, kExitUsage);

    api::client::TerminalHooks hooks;
    hooks.output = [&context](api::OutputStream stream, std::string_view bytes) {
        write_output(context, stream, bytes);
    };
    if (headless != nullptr) {
        hooks.output = [headless](api::OutputStream stream, std::string_view bytes) {
            headless->output(stream, bytes);
        };
        hooks.events_mode = [headless](const std::string& mode) { headless->structured = mode == "structured"; };
        hooks.event = [headless](const json::object& event) { headless->event(event); };
    }
    // A headless run's input is its prompt. At a terminal, typed lines would reach the
    // program only after Ctrl-D, and a harness that reads a piped stdin to its end (codex
    // exec adds it to the prompt) would wait for that, so it gets an empty stdin. Piped
    // input is passed on.
    struct EmptyInput {
        int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        ~EmptyInput() {
            if (fd >= 0) ::close(fd);
        }
    };
    std::optional<EmptyInput> empty_input;
    if (headless != nullptr && context.input_fd >= 0 && ::isatty(context.input_fd) != 0) empty_input.emplace();
    const int input_fd = empty_input ? empty_input->fd : context.input_fd;
    if (with_input) {
        hooks.input_fd = input_fd;
        hooks.filter = [&keys](std::string& bytes) { return keys->filter(bytes); };
        // A pipe session's stdin ends with ours; a terminal has no such thing.
        hooks.eof_on_input_end = !keyboard;
        if (keyboard) hooks.window_size = [&context] { return window_size(context.input_fd); };
    }
    std::optional<RawMode> raw;
    if (keyboard) raw.emplace(context.input_fd);
    auto client = context.connect();
    auto end = client->attach(session_path(id) + "/terminal" + std::string(query), hooks);
    raw.reset();
    if (!end) {
        const bool unavailable = end.error().code == ErrorCode::unavailable;
        return session.fail(end.error().message, unavailable ? kExitUnavailable : kExitRefused);
    }
    switch (end->how) {
    case api::client::TerminalEnd::How::exited:
        return static_cast<int>(end->exit_code & 0xff);
    case api::client::TerminalEnd::How::detached:
        context.err << "\r\nhandler: detached from session " << id << "; it keeps running. "
                    << "`handler attach " << id << "` returns to it.\n";
        return kExitOk;
    case api::client::TerminalEnd::How::ended:
        break;
    }
    return session.fail(end->reason.empty() ? "session " + id + " ended" : end->reason);
}

// Waits until a detached session has left `starting`, so a failure to start is reported
// here and not discovered later.
int wait_until_started(Session& session, const std::string& id) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
        auto answer = session.call("GET", session_path(id));
        if (!answer) return session.exit_code();
        const auto& record = answer->as_object();
        const std::string state(record.at("state").as_string());
        if (state == "failed")
            return session.fail("session " + id + " failed to start: " +
                                (record.at("message").is_string()
                                     ? std::string(record.at("message").as_string())
                                     : std::string("no reason recorded")));
        if (state != "starting") return kExitOk;
        if (std::chrono::steady_clock::now() > deadline)
            return session.fail("session " + id + " is still starting after 120 s; see "
                                "`handler session list`",
                                kExitUnavailable);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

std::string send_answer(CliContext& context, const std::string& id, const std::string& tool_call,
                        const std::string& option);

int command_run(Session& session, const Options& options, bool terminal) {
    CliContext& context = session.context();
    json::object body = {{"directory", context.current_dir.string()}};
    if (!options.target.empty()) body["name"] = options.target;
    if (options.prompt) {
        if (options.prompt->empty()) return session.fail("the prompt is empty", kExitUsage);
        body["prompt"] = *options.prompt;
    }
    if (options.session_network) body["network"] = *options.session_network;
    if (options.session_model) body["model"] = *options.session_model;
    if (options.session_thinking) body["thinking"] = *options.session_thinking;
    if (terminal && !options.args.empty()) {
        json::array args;
        for (const auto& arg : options.args) args.emplace_back(arg);
        body["args"] = std::move(args);
    }
    if (auto size = window_size(context.input_fd)) {
        body["rows"] = size->first;
        body["cols"] = size->second;
    }
    json::value value = body;
    auto created = session.call("POST", "/api/v1/sessions", &value);
    if (!created) return session.exit_code();
    const std::string id(created->as_object().at("id").as_string());
    if (options.detach) {
        if (const int waited = wait_until_started(session, id); waited != kExitOk) return waited;
        context.out << id << '\n';
        return kExitOk;
    }
    const auto* tty = created->as_object().if_contains("tty");
    if (options.prompt) {
        HeadlessPrinter printer{context, options.json_output, false, {}, {}, false};
        // A harness that asks before it acts: the person at this terminal answers, or,
        // with nobody here, any other client does (docs/harnesses.md).
        std::optional<TerminalAsker> asker;
        if (context.input_fd >= 0 && ::isatty(context.input_fd) != 0) {
            asker.emplace(context.input_fd, context.err, [&context, id](const std::string& call, const std::string& option) {
                return send_answer(context, id, call, option);
            });
            printer.on_request = [&asker](const json::object& request) { asker->asked(request); };
            printer.on_answer = [&asker](const std::string& call) { asker->answered(call); };
        } else {
            printer.on_request = [&context, id](const json::object& request) {
                const auto* call = request.if_contains("toolCallId");
                write_output(context, api::OutputStream::stderr_,
                             "handler: the agent asks before it acts and waits for an answer. " +
                                 describe_request(request) + "\n  Answer from another client, or with `handler session answer " +
                                 id + " allow|always|reject --tool-call " +
                                 printable(call != nullptr && call->is_string() ? std::string_view(call->as_string())
                                                                                : std::string_view("?")) +
                                 "`\n");
            };
        }
        const int code = attach_to(session, id, options, "?events=1", true, false, &printer);
        return code == kExitOk && printer.failed ? kExitRefused : code;
    }
    if (options.json_output) return session.fail("--json needs -p (a headless run)", kExitUsage);
    return attach_to(session, id, options, "", true, tty == nullptr || tty->as_bool());
}

int command_attach(Session& session, const Options& options) {
    auto record = session.call("GET", session_path(options.target));
    if (!record) return session.exit_code();
    const auto* tty = record->as_object().if_contains("tty");
    return attach_to(session, options.target, options, options.read_only ? "?read_only=1" : "",
                     !options.read_only, tty == nullptr || tty->as_bool());
}

int command_logs(Session& session, const Options& options) {
    if (!session.call("GET", session_path(options.target))) return session.exit_code();
    if (!options.follow) {
        auto client = session.context().connect();
        auto response = client->call("GET", session_path(options.target) + "/log", "");
        if (!response) return session.fail(response.error().message, kExitUnavailable);
        if (response->status != 200)
            return session.fail("handlerd answered " + std::to_string(response->status) + ": " +
                                response->body);
        write_output(session.context(), api::OutputStream::stdout_, response->body);
        return kExitOk;
    }
    // Everything kept, then live output from exactly where that ended.
    auto client = session.context().connect();
    auto response = client->call("GET", session_path(options.target) + "/log", "");
    if (!response) return session.fail(response.error().message, kExitUnavailable);
    write_output(session.context(), api::OutputStream::stdout_, response->body);
    const auto end = response->headers.find("X-Handler-Log-End");
    const std::string from = end == response->headers.end() ? "0" : end->second;
    const int code = attach_to(session, options.target, options, "?read_only=1&from=" + from,
                               false, false);
    // Following ends when the session does; its exit status is not ours.
    return code == kExitUnavailable || code == kExitRefused ? code : kExitOk;
}

int command_session_show(Session& session, const Options& options) {
    auto record = session.call("GET", session_path(options.target));
    if (!record) return session.exit_code();
    return print_or_json(session, options, *record,
                         [&](std::ostream& out) { print_record(out, record->as_object()); });
}

int command_session_stop(Session& session, const Options& options) {
    if (!session.call("POST", session_path(options.target) + "/stop")) return session.exit_code();
    session.context().out << "Stopping session " << options.target << ".\n";
    return kExitOk;
}

int command_session_rm(Session& session, const Options& options) {
    if (options.force) {
        auto record = session.call("GET", session_path(options.target));
        if (!record) return session.exit_code();
        const std::string state(record->as_object().at("state").as_string());
        if (state == "running" || state == "starting") {
            if (!session.call("POST", session_path(options.target) + "/stop"))
                return session.exit_code();
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            for (;;) {
                auto now = session.call("GET", session_path(options.target));
                if (!now) return session.exit_code();
                const std::string current(now->as_object().at("state").as_string());
                if (current != "running" && current != "starting") break;
                if (std::chrono::steady_clock::now() > deadline)
                    return session.fail("session " + options.target + " did not stop within 30 s");
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
    }
    if (!session.call("DELETE", session_path(options.target))) return session.exit_code();
    session.context().out << "Removed session " << options.target << ".\n";
    return kExitOk;
}

// Pages through a session's list at `path` (its `key` array, ordered by `cursor`) from
// the start, handing each page to `print`; with --follow, goes on until the session has
// ended and nothing new came.
int page_through(Session& session, const Options& options, const std::string& path, const char* key,
                 const char* cursor, const std::function<void(json::array&)>& print) {
    std::int64_t after = 0;
    bool first = true;
    for (;;) {
        auto answer = session.call("GET", session_path(options.target) + path + "?after=" + std::to_string(after));
        if (!answer) return session.exit_code();
        auto& entries = answer->as_object().at(key).as_array();
        if (!entries.empty()) after = entries.back().as_object().at(cursor).to_number<std::int64_t>();
        if (options.json_output) {
            for (const auto& entry : entries) session.context().out << json::serialize(entry) << '\n';
        } else if (!entries.empty() || (first && !options.follow)) {
            print(entries);
            first = false;
        }
        session.context().out.flush();
        if (!options.follow) return kExitOk;
        auto record = session.call("GET", session_path(options.target));
        if (!record) return session.exit_code();
        const std::string state(record->as_object().at("state").as_string());
        if ((state != "running" && state != "starting") && entries.empty()) return kExitOk;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
}

int command_network_log(Session& session, const Options& options) {
    return page_through(session, options, "/network", "entries", "id", [&](json::array& entries) {
        for (auto& entry : entries) {
            auto& object = entry.as_object();
            object["where"] = std::string(object.at("host").as_string()) + ":" +
                              std::to_string(object.at("port").to_number<std::int64_t>()) +
                              std::string(object.at("path").as_string());
        }
        print_table(session.context().out, entries,
                    {"id", "method", "where", "verdict", "rule", "secret", "bytes_up", "bytes_down", "reason"});
    });
}

// One line about an event, for a person: its text, the tool call's title, the result.
std::string event_summary(std::string_view kind, const json::object& payload) {
    const auto text_at = [](const json::object& object, std::string_view field) -> std::string {
        const auto* value = object.if_contains(field);
        return value != nullptr && value->is_string() ? std::string(value->as_string()) : std::string();
    };
    std::string summary;
    if (kind == "user_prompt" || kind == "agent_message_chunk" || kind == "agent_thought_chunk") {
        if (const auto* content = payload.if_contains("content"); content != nullptr && content->is_object())
            summary = text_at(content->as_object(), "text");
    } else if (kind == "tool_call") {
        summary = text_at(payload, "title") + " (" + text_at(payload, "kind") + ", " + text_at(payload, "toolCallId") + ")";
    } else if (kind == "tool_call_update") {
        summary = text_at(payload, "toolCallId") + " " + text_at(payload, "status");
    } else if (kind == "plan") {
        if (const auto* entries = payload.if_contains("entries"); entries != nullptr && entries->is_array())
            for (const auto& entry : entries->as_array())
                if (entry.is_object())
                    summary += (summary.empty() ? "" : "; ") + text_at(entry.as_object(), "status") + ": " +
                               text_at(entry.as_object(), "content");
    } else if (kind == "permission_request") {
        summary = text_at(payload, "title");
    } else if (kind == "mode_changed") {
        summary = text_at(payload, "modeId") + (payload.contains("model") ? " " + text_at(payload, "model") : "");
    } else if (kind == "result") {
        const auto* failed = payload.if_contains("isError");
        summary = (failed != nullptr && failed->is_bool() && failed->as_bool() ? "failed: " : "") +
                  text_at(payload, "stopReason") + (payload.contains("result") ? ": " + text_at(payload, "result") : "");
    } else if (kind == "error") {
        summary = text_at(payload, "message");
    }
    summary = printable(summary); // it comes from inside the container: no escape sequences
    constexpr std::size_t kWidth = 160;
    if (summary.size() > kWidth) {
        std::size_t cut = kWidth;
        while (cut > 0 && (static_cast<unsigned char>(summary[cut]) & 0xC0) == 0x80) --cut; // whole characters
        summary = summary.substr(0, cut) + "\xe2\x80\xa6";
    }
    return summary;
}

// Sends one answer; what to tell the person when handlerd refused it, empty when it took it.
std::string send_answer(CliContext& context, const std::string& id, const std::string& tool_call,
                        const std::string& option) {
    json::value body = {{"toolCallId", tool_call}, {"optionId", option}};
    auto client = context.connect();
    auto response = client->call("POST", session_path(id) + "/answers", json::serialize(body));
    if (!response) return response.error().message;
    if (response->status == 204) return {};
    boost::system::error_code error;
    const auto parsed = json::parse(response->body, error);
    const auto* message = !error && parsed.is_object() ? parsed.as_object().if_contains("message") : nullptr;
    return message != nullptr && message->is_string() ? std::string(message->as_string())
                                                      : "handlerd answered " + std::to_string(response->status);
}

int command_session_answer(Session& session, const Options& options) {
    // The requests still open, from the session's events, to find the one meant and the
    // option the word names.
    json::array events;
    constexpr std::size_t kPage = 1000;
    for (std::int64_t after = 0;;) {
        auto page = session.call("GET", session_path(options.target) + "/events?after=" + std::to_string(after) +
                                            "&limit=" + std::to_string(kPage));
        if (!page) return session.exit_code();
        auto& list = page->as_object().at("events").as_array();
        if (list.empty()) break;
        after = list.back().as_object().at("seq").to_number<std::int64_t>();
        const bool last = list.size() < kPage;
        for (auto& event : list) events.push_back(std::move(event));
        if (last) break;
    }
    auto open = open_requests(events);
    if (!options.tool_call.empty())
        std::erase_if(open, [&](const json::object& request) {
            const auto* call = request.if_contains("toolCallId");
            return call == nullptr || !call->is_string() || call->as_string() != options.tool_call;
        });
    if (open.empty())
        return session.fail("session " + options.target + " has no open permission request" +
                                (options.tool_call.empty() ? std::string() : " for tool call " + options.tool_call) +
                                "; `handler session events " + options.target + "` shows its requests and answers",
                            kExitRefused);
    if (open.size() > 1) {
        std::string list;
        for (const auto& request : open)
            list += "\n  " + printable(request.at("toolCallId").as_string()) + "  " + describe_request(request);
        return session.fail("session " + options.target + " has several open requests; name one with --tool-call:" + list,
                            kExitUsage);
    }
    auto option = choose_option(open.front(), options.answer);
    if (!option) return session.fail(option.error().message, kExitUsage);
    const std::string call(open.front().at("toolCallId").as_string());
    if (std::string failed = send_answer(session.context(), options.target, call, *option); !failed.empty())
        return session.fail(failed, kExitRefused);
    session.context().out << "Answered tool call " << printable(call) << " with " << printable(*option) << ".\n";
    return kExitOk;
}

int command_session_events(Session& session, const Options& options) {
    return page_through(session, options, "/events", "events", "seq", [&](json::array& events) {
        for (auto& event : events) {
            auto& object = event.as_object();
            const auto* payload = object.if_contains("payload");
            object["summary"] = event_summary(object.at("kind").as_string(),
                                              payload != nullptr && payload->is_object() ? payload->as_object()
                                                                                         : json::object());
        }
        print_table(session.context().out, events, {"seq", "kind", "summary"});
    });
}

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

int command_network_learned(Session& session, const Options& options) {
    return command_list(session, options, session_path(options.target) + "/learned", "learned",
                        {"host", "port", "count", "first_seen", "last_seen"});
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
    const Tree tree = define(app, options);

    // CLI11 takes the arguments in reverse order.
    std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error, context.out, context.err);
        return code == 0 ? kExitOk : kExitUsage;
    }

    if (tree.completions->parsed()) {
        context.out << generate_completions(app, options.shell);
        return kExitOk;
    }
    if (tree.daemon->parsed()) return context.run_daemon(DaemonCommand{options.verbosity});
    if (tree.setup->parsed()) return command_setup(context, options);

    Session session(context);
    try {
        if (tree.status->parsed()) return command_status(session, options);
        if (tree.plugins_list->parsed()) return command_plugins_list(session, options);
        if (tree.context_add->parsed()) return command_context_add(session, options);
        if (tree.context_list->parsed())
            return command_list(session, options, "/api/v1/contexts", "contexts",
                                {"id", "name"});
        if (tree.project_add->parsed()) return command_project_add(session, options);
        if (tree.project_list->parsed())
            return command_list(session, options, "/api/v1/projects", "projects",
                                {"id", "name", "context", "path", "allowed_hosts"});
        if (tree.project_edit->parsed()) return command_project_edit(session, options);
        if (tree.agent_add->parsed()) return command_agent_add(session, options);
        if (tree.agent_list->parsed()) return command_agent_list(session, options);
        if (tree.agent_show->parsed()) return command_agent_show(session, options);
        if (tree.agent_edit->parsed()) return command_agent_edit(session, options);
        if (tree.agent_rm->parsed()) return command_agent_rm(session, options);
        if (tree.run->parsed()) return command_run(session, options, false);
        if (tree.terminal->parsed()) return command_run(session, options, true);
        if (tree.attach->parsed()) return command_attach(session, options);
        if (tree.logs->parsed()) return command_logs(session, options);
        if (tree.session_list->parsed())
            return command_list(session, options, "/api/v1/sessions", "sessions",
                                {"id", "harness", "state", "exit_code", "mode", "message"});
        if (tree.session_show->parsed()) return command_session_show(session, options);
        if (tree.session_stop->parsed()) return command_session_stop(session, options);
        if (tree.session_rm->parsed()) return command_session_rm(session, options);
        if (tree.session_events->parsed()) return command_session_events(session, options);
        if (tree.session_answer->parsed()) return command_session_answer(session, options);
        if (tree.account_add->parsed()) return command_account_add(session, options);
        if (tree.account_list->parsed())
            return command_list(session, options, "/api/v1/accounts", "accounts",
                                {"name", "kind", "context", "has_secret", "base_url"});
        if (tree.account_set_key->parsed()) return command_account_set_key(session, options);
        if (tree.account_set_url->parsed()) return command_account_set_url(session, options);
        if (tree.network_log->parsed()) return command_network_log(session, options);
        if (tree.network_learned->parsed()) return command_network_learned(session, options);
        if (tree.network_allow->parsed()) {
            Options allow = options;
            allow.allow_hosts = {options.host};
            return command_agent_edit(session, allow);
        }
    } catch (const std::exception& error) {
        // A well-formed answer of an unexpected shape (a field missing or of another
        // type): the daemon and the CLI disagree about the API.
        context.err << "handler: unexpected answer from handlerd: " << error.what() << '\n';
        return kExitInternal;
    }
    context.err << "handler: no command given; see `handler --help`\n";
    return kExitUsage;
}

} // namespace handler::cli
