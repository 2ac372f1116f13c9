// The MCP servers a client (an editor over ACP) asked for, as ACP's McpServer[] JSON
// (sdk.h, hd_launch_request.mcp_servers), turned into the "mcpServers" object most
// harnesses read (Claude Code's --mcp-config, Codex's and others' config files): a name
// per server, "command"/"args"/"env" for a stdio one (it runs inside the container),
// "type"/"url"/"headers" for an HTTP or SSE one (reached through the session's proxy).
#pragma once

#include <boost/json/object.hpp>

#include <string_view>

namespace handler::plugin_common {

// {"mcpServers":{NAME:{...}}}; an empty object for an empty list. Throws
// std::invalid_argument, naming the entry, for a list that is not ACP's shape (handlerd
// checked it already; this is the second line).
boost::json::object mcp_config(std::string_view servers_json);

} // namespace handler::plugin_common
