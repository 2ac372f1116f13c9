// What starting a session decides, as pure functions of the request and what the store
// and the harness catalog say, so that every refusal and every choice is unit-tested
// without podman or sockets (tests/unit/sessions/start_plan_test.cpp). SessionManager::
// start carries the plans out: it records the session, asks the plugins, makes the
// stand-ins, opens the channel and launches.
//
// Two steps, because the plugins answer in between:
//   plan_start      request + snapshot → StartPlan: project, agent, account, harness,
//                   network mode, the session's record and the plugins' launch request.
//                   A refusal here records nothing.
//   plan_container  StartPlan + the harness's and addons' answers → ContainerPlan: the
//                   merged launch, the keys to make stand-ins for, the host rules, the
//                   account's state folder and the rest of the container's context. A
//                   refusal here fails the session already recorded (its message says why).
#pragma once

#include "api/session_control.hpp"
#include "core/result.hpp"
#include "plugins/harness_description.hpp"
#include "plugins/launch_spec.hpp"
#include "sessions/harness_catalog.hpp"
#include "sessions/launch.hpp"
#include "sessions/session_keys.hpp"
#include "store/records.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace handler::sessions {

// The harness `handler run` uses in a project without agents.
inline constexpr const char* kDefaultHarness = "shell";

// What the store holds, read once before the plan.
struct StartSnapshot {
    std::vector<store::Project> projects;
    std::vector<store::Agent> agents; // in the store's order (by id)
    std::vector<store::Account> accounts;
};

// The daemon's side of the decision (SessionManagerOptions, the clock).
struct StartSettings {
    std::int64_t now_ms = 0;
    std::string default_image;
    std::chrono::milliseconds learn_window{15 * 60 * 1000};
    // The user's home folder, which cannot be a project: a start from there is told to
    // register the project's own folder instead. Empty: not known.
    std::filesystem::path home_dir;
    std::filesystem::path control_root; // <runtime>/sessions
    std::filesystem::path helper_dir;
    std::filesystem::path account_state_root; // empty: no account keeps state
    std::filesystem::path session_root;       // <data>/sessions: each session's output and state
    std::uint16_t proxy_port = 0;
    bool has_key_store = false;
    bool trust_ca = false; // handler has a CA for the container to trust
};

struct StartPlan {
    store::Project project;
    std::optional<store::Agent> agent;
    std::optional<store::Account> account;   // the agent's, whatever its kind
    std::optional<LocalServer> local_server; // when that account is a local model server
    plugins::HarnessDescription harness;     // what the harness said of itself
    store::NewSession record;                // what the session is recorded as
    plugins::LaunchRequest launch;           // for the plugins; session_id is set at start
    network::Mode network_mode = network::Mode::filtered; // the one it starts in, learn included
    std::vector<std::string> addons;         // the agent's, in order
    std::string prompt_payload;              // the user_prompt event's payload (JSON)
    // MCP servers the client asked for that the harness does not honour, for a visible
    // message at start ("'files' (stdio)").
    std::vector<std::string> unhonoured_mcp;
    std::uint16_t rows = 24;
    std::uint16_t cols = 80;
};

// Refuses: a request naming more than one of agent/harness/name; a relative directory;
// an agent name held by several projects; an unknown agent or harness; a project with
// several agents and none named; a directory no project holds (saying what to register,
// which is never the home folder); a network mode that is not one; a harness that
// cannot say what it is; a thinking level or an account kind the harness's description
// does not list (when it lists any).
Result<StartPlan> plan_start(const api::StartRequest& request, const StartSnapshot& snapshot,
                             const HarnessCatalog& harnesses, const StartSettings& settings);

struct ContainerPlan {
    plugins::LaunchSpec launch;         // the harness's, with every addon's added
    std::vector<std::string> key_kinds; // a stand-in to make for each, in the harness's order
    std::vector<std::string> model_hosts; // the harness's, its keys' and its local server's
    std::vector<std::string> addon_hosts;
    LaunchContext context; // all but the stand-ins, which start() makes
    bool build_image = false; // the harness named no image: its own (base + recipe) is used
};

// `contributions`: each addon's answer, in the agent's order. Refuses: an addon that
// overreaches (merge_addon says which), a key without a key store, a host rule that does
// not parse, an account kept in another context than the project's, and account state
// where this handlerd keeps none.
Result<ContainerPlan> plan_container(const StartPlan& plan, const std::string& session_id,
                                     plugins::LaunchSpec launch,
                                     const std::vector<std::pair<std::string, plugins::LaunchSpec>>& contributions,
                                     const StartSettings& settings);

} // namespace handler::sessions
