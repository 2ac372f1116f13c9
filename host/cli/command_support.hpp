// What the CLI's command handlers share (internal to host/cli): the values a command
// line carries, one conversation with handlerd, and the lookups and printing most
// commands start or end with. The commands themselves are the table in cli.cpp.
#pragma once

#include "cli/cli.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::cli {

// Every value a command line can carry, bound to the CLI11 tree by the command table.
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
    bool clear_model = false;    // agent edit --no-model: the harness's default again
    bool clear_thinking = false; // agent edit --no-thinking
    bool clear_context = false;
    bool all_projects = false;
    bool check_only = false;
    bool print_url = false; // handler ui
    std::string shell;

    // Sessions.
    std::string target; // run/terminal: agent or harness; attach/logs/stop/rm: session id
    std::optional<std::string> prompt;
    std::vector<std::string> images; // session prompt --image FILE
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
    std::string session_id; // network allow --session
    std::string kind;
    bool key_stdin = false;
    std::optional<std::string> base_url;
    std::string answer;    // session answer: an option, its number, or allow/always/reject
    std::string tool_call; // session answer --tool-call
    std::optional<std::int64_t> minutes; // network learn --minutes
    bool stop_learning = false;          // network learn --stop
    bool show_diff = false;              // session changes --diff
};

// One conversation with handlerd: turns transport failures and error answers into the
// message and exit code the user sees.
class Session {
public:
    explicit Session(CliContext& context) : context_(context) {}

    // The answer's JSON (null for 204); nullopt after the error was printed.
    std::optional<boost::json::value> call(std::string_view method, std::string_view target,
                                           const boost::json::value* body = nullptr);
    int fail(std::string_view message, int code = kExitRefused);

    int exit_code() const { return exit_code_; }
    CliContext& context() { return context_; }
    const Clock& clock() const { return *context_.clock; }
    const TimeZone& time_zone() const { return *context_.time_zone; }

private:
    CliContext& context_;
    std::unique_ptr<ApiClient> client_;
    int exit_code_ = kExitOk;
};

std::string url_encode(std::string_view text);
std::string session_path(const std::string& id);

// The project a command is about: --project, else the registered project that contains
// the current folder (like git finds its repository). `other_ways` is appended to the
// error's list of what to do instead (", or --session ID ...").
std::optional<boost::json::object> resolve_project(Session& session, const Options& options,
                                                   std::string_view other_ways = {});
std::optional<boost::json::object> resolve_agent(Session& session, const Options& options,
                                                 boost::json::object* project_out = nullptr,
                                                 std::string_view other_ways = {});

// Ids to names from a listing (`GET target`, its `key` array of {id, name}).
std::optional<std::map<std::int64_t, std::string>> names_by_id(Session& session,
                                                               std::string_view target,
                                                               std::string_view key);

int print_or_json(Session& session, const Options& options, const boost::json::value& value,
                  const std::function<void(std::ostream&)>& human);
// A listing as a table of `columns`, or with --json the API's array.
int command_list(Session& session, const Options& options, std::string_view target,
                 std::string_view key, const std::vector<std::string>& columns);

// Sends the changes in `body` to `target` and prints the record handlerd answers, with
// `human` when given (else with its times as local times).
int patch_record(Session& session, const Options& options, const std::string& target,
                 boost::json::object body, std::string_view command,
                 const std::function<void(std::ostream&, boost::json::object)>& human = {});

boost::json::array string_list(const std::vector<std::string>& items);
// Entries added to and removed from the list `field` of `record`, into `body`: the API
// replaces a whole list.
void put_list_changes(boost::json::object& body, const boost::json::object& record,
                      const char* field, const std::vector<std::string>& add,
                      const std::vector<std::string>& remove);

// A session's raw output bytes to the context's stdout or stderr, unbuffered.
void write_output(CliContext& context, api::OutputStream stream, std::string_view bytes);

} // namespace handler::cli
