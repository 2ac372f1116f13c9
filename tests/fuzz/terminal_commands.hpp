// A parsed terminal command written back as a client writes it (docs/api.md, "Terminal"
// and "Terminal channels"), and when two are the same: fuzz_events_socket and
// fuzz_terminal_channels both check that what parses, written back, parses the same.
#pragma once

#include "api/terminal_protocol.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <string>

namespace handler::fuzz {

// On the terminal route (kNoChannel) there is no "channel" field, and only resize and eof.
inline std::string written_back(const api::TerminalCommand& command) {
    using Kind = api::TerminalCommand::Kind;
    boost::json::object message;
    if (command.channel != api::kNoChannel) message["channel"] = command.channel;
    switch (command.kind) {
    case Kind::resize:
        message["type"] = "resize";
        message["rows"] = command.rows;
        message["cols"] = command.cols;
        break;
    case Kind::eof: message["type"] = "eof"; break;
    case Kind::detach: message["type"] = "detach"; break;
    case Kind::attach:
        message["type"] = "attach";
        message["session"] = command.session;
        if (command.options.from) message["from"] = *command.options.from;
        message["read_only"] = command.options.read_only;
        message["events"] = command.options.events;
        message["output"] = command.options.output;
        if (command.options.events_after != 0) message["after"] = command.options.events_after;
        break;
    }
    return boost::json::serialize(message);
}

inline bool same(const api::AttachOptions& a, const api::AttachOptions& b) {
    return a.from == b.from && a.read_only == b.read_only && a.events == b.events && a.output == b.output &&
           a.events_after == b.events_after;
}

inline bool same(const api::TerminalCommand& a, const api::TerminalCommand& b) {
    return a.kind == b.kind && a.channel == b.channel && a.rows == b.rows && a.cols == b.cols &&
           a.session == b.session && same(a.options, b.options);
}

} // namespace handler::fuzz
