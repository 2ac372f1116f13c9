// Who made a connection to the egress proxy (docs/network.md, "Who made a connection"):
// the shim's answer (the process that holds the socket and its parents, from the
// container's /proc) and the harness's tool call it belongs to, if one explains it.
//
// Everything here comes from inside the container: the command lines are the processes'
// own to write, and so are the tool calls' commands (the harness's output). It is for
// display: nothing here decides anything, and the policy never reads it.
//
// Pure, so it is unit-tested without a session. Threading: the io thread only (it
// belongs to a Channel).
#pragma once

#include "store/records.hpp"

#include <handler/shim_protocol.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::sessions {

// The tool calls of a session that run commands and have not ended, as its stored events
// say: a `tool_call` of kind `execute` whose rawInput has a `command` (a string, or an
// array of strings) opens one; its `tool_call_update` with status completed or failed,
// or the turn's `result`, ends it.
class OpenToolCalls {
public:
    static constexpr std::size_t kMaxOpen = 256;            // the harness's output decides how many
    static constexpr std::size_t kMaxCommandBytes = 64 * 1024; // longer ones are never matched

    struct Call {
        std::string id;
        std::string title;
        std::string command;
        std::uint64_t order = 0; // later calls have higher numbers
    };

    void observe(std::string_view kind, std::string_view payload);
    const std::map<std::string, Call, std::less<>>& open() const { return open_; }

    // The call that explains a process chain (the holder first, then its parents), or
    // nullopt. Nearest process first: among the calls that match it, the one whose
    // command matches most closely, then the latest. A process matches a call when
    //   - its command line (arguments joined by spaces) contains the call's command: the
    //     harness ran it through a shell (`bash -c 'source … && eval CMD'`), or it is
    //     the command itself; or
    //   - it is a shell given a script (`-c SCRIPT`, `-lc SCRIPT`) that the call's
    //     command contains: the harness reported the whole `bash -lc '…'` line.
    std::optional<Call> match(const std::vector<shim::OwnerProcess>& chain) const;

private:
    std::map<std::string, Call, std::less<>> open_;
    std::uint64_t next_order_ = 0;
};

// A process's command line for display: the arguments joined by spaces (NUL bytes, which
// separate them, cannot be in one), "…" when the shim cut it.
std::string display_command(const shim::OwnerProcess& process);

// The origin of connection `connection` of session `session_id` from the shim's answer.
// `events` false: the session reports no tool calls (a terminal session, or a harness
// without events), which the entry says rather than "no tool call".
store::NetworkOrigin origin_of(const std::string& session_id, std::int64_t connection,
                               const shim::OwnerAnswer& answer, const OpenToolCalls& calls, bool events);

// An origin that says only why it is unknown.
store::NetworkOrigin unknown_origin(const std::string& session_id, std::int64_t connection, std::string why);

} // namespace handler::sessions
