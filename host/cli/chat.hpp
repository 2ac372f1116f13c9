// The conversation commands (internal to host/cli; docs/conversations.md): `handler chat`
// and `handler session prompt|cancel|resume`. Rows of the command table in cli.cpp.
#pragma once

#include "cli/command_support.hpp"

namespace handler::cli {

int command_chat(Session& session, const Options& options);
int command_session_prompt(Session& session, const Options& options);
int command_session_cancel(Session& session, const Options& options);
int command_session_resume(Session& session, const Options& options);

} // namespace handler::cli
