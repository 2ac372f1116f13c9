// The Conversations port over handlerd's unix socket: each call an HTTP request of the
// v1 API (docs/api.md, docs/conversations.md), the events a WebSocket
// (GET /api/v1/sessions/ID/terminal?events=1&output=0&read_only=1&after=SEQ) that comes back
// by itself after handlerd restarts, going on after the last seq it delivered. Runs on
// the caller's io_context; no thread of its own.
#pragma once

#include "acp/conversations.hpp"

#include <filesystem>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace handler::acp {

std::unique_ptr<Conversations> make_handlerd_port(boost::asio::io_context& io, std::filesystem::path socket,
                                                  unsigned timeout_ms = 30'000);

} // namespace handler::acp
