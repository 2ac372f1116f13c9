// `handler acp`: the ACP agent on stdin and stdout, backed by handlerd (docs/acp.md).
// stdout carries nothing but protocol messages; logs and the one-line reasons for
// failures go to stderr, which editors show in their logs.
#pragma once

#include <string>

namespace handler::acp {

struct ServerOptions {
    std::string agent; // --agent NAME
    int verbosity = 0; // each -v: more log lines on stderr
};

// Starts handlerd (`handlerd --detach`, beside this program) when it does not answer,
// then serves until stdin ends or SIGTERM. Returns the exit code.
int run_stdio_server(const ServerOptions& options);

} // namespace handler::acp
