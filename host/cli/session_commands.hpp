// The commands about sessions (internal to host/cli): starting and attaching to them,
// their output, events and answers, and what they reached on the network. Rows of the
// command table in cli.cpp.
#pragma once

#include "cli/command_support.hpp"

namespace handler::cli {

// `handler run` (terminal = false) and `handler terminal` (terminal = true: ARGS for the
// harness's program).
int command_run(Session& session, const Options& options, bool terminal);
int command_attach(Session& session, const Options& options);
int command_logs(Session& session, const Options& options);
int command_session_list(Session& session, const Options& options);
int command_session_show(Session& session, const Options& options);
int command_session_stop(Session& session, const Options& options);
int command_session_rm(Session& session, const Options& options);
int command_session_events(Session& session, const Options& options);
int command_session_answer(Session& session, const Options& options);
int command_network_log(Session& session, const Options& options);
int command_network_learned(Session& session, const Options& options);
int command_session_changes(Session& session, const Options& options);
int command_network_learn(Session& session, const Options& options);

} // namespace handler::cli
