// JSON for the routes: reading request bodies field by field with messages that name
// the field, writing records in the shapes docs/api.md documents, and error responses.
// boost::json only; no transport types.
#pragma once

#include "api/http_types.hpp"
#include "api/server_guards.hpp"
#include "api/session_control.hpp"
#include "core/result.hpp"
#include "plugins/plugin_record.hpp"
#include "store/records.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace handler::api {

// status_for(ErrorCode) and error_response(ErrorCode, message) come from
// server_guards.hpp, so the transport and the routes map errors to statuses one way.

Response json_response(unsigned status, const boost::json::value& body);
// {"error":{"code","message"}} with the status that matches error.code.
Response error_response(const Error& error);
// The same with "field": the input field the mistake is in ("name", "allowed_hosts[1]"),
// so that a form shows the message under it (docs/api.md, "Errors"). Empty: none.
Response error_response(const Error& error, std::string_view field);
Response error_response(ErrorCode code, std::string_view field, std::string message);

// Parses a request body that must be one JSON object. A syntax error names the line
// and column ("body is not valid JSON: syntax error at line 1, column 9").
Result<boost::json::object> parse_body(std::string_view body);

// Reads the fields of one body object. Every accessor fails with invalid_argument and
// a message naming the field: "field 'name' must be a string".
class BodyReader {
public:
    explicit BodyReader(const boost::json::object& body) : body_(body) {}

    // Unknown fields are refused, so a typo ("nmae") is an error rather than ignored.
    Result<void> allow_only(std::initializer_list<std::string_view> fields) const;

    bool has(std::string_view field) const { return body_.contains(field); }

    Result<std::string> required_string(std::string_view field) const;
    // Absent → std::nullopt. null is refused: the field is not nullable.
    Result<std::optional<std::string>> optional_string(std::string_view field) const;
    // Absent → std::nullopt; null → an engaged optional holding std::nullopt (clear it).
    Result<std::optional<std::optional<std::string>>> nullable_string(std::string_view field) const;
    Result<std::optional<std::vector<std::string>>> optional_string_list(
        std::string_view field) const;
    // A project given by id (integer) or absolute path (string).
    struct ProjectRef {
        std::optional<std::int64_t> id;
        std::string path;
    };
    Result<std::optional<ProjectRef>> optional_project(std::string_view field) const;

    // The field the first failed accessor was about (an unknown one for allow_only), for
    // error_response(error, field); empty while none failed.
    const std::string& failed_field() const { return failed_field_; }
    // A mistake in `field` the caller found (a value the field may not have): invalid_argument
    // with `message`, recorded as failed_field().
    Error fail(std::string_view field, std::string message) const;

private:
    const boost::json::object& body_;
    mutable std::string failed_field_;
};

// The JSON shapes of docs/api.md.
boost::json::object to_json(const store::Context& context);
boost::json::object to_json(const store::Project& project);
boost::json::object to_json(const store::Account& account);
boost::json::object to_json(const store::Agent& agent);
boost::json::object to_json(const store::Session& session);
// {"session","seq","at","kind","payload":{...}}; a payload that is not JSON (never
// stored by handlerd, but the database is a file) becomes {}.
boost::json::object to_json(const store::SessionEvent& event);
// An image build (docs/api.md, "Images"); its log only `with_log`, as events carry lines.
boost::json::object to_json(const ImageBuild& build, bool with_log);
// Adds to a network log entry's JSON who made its connection (docs/api.md): `connection`,
// `origin` (tool_call, no_tool_call, unknown, pending, untraced), `origin_note`, `process`
// ({pid, command, parents} or null) and `tool_call` ({id, title} or null).
void add_origin(boost::json::object& item, const store::NetworkEntry& entry);
// A loaded harness's record carries "harness": its description (models, credentials,
// thinking levels, modes, default hosts, launch modes, events, stdin), or
// "harness_error" when its describe() could not be read.
boost::json::object to_json(const plugins::HarnessDescription& harness);
boost::json::object to_json(const plugins::PluginRecord& plugin);

// {"type":TYPE,"data":DATA,"at":MS}, serialized, for the EventHub.
std::string event_json(std::string_view type, boost::json::object data, std::int64_t at_ms);

} // namespace handler::api
