// JSON-RPC 2.0 as ACP speaks it over stdio (docs/acp.md): one message per line, both
// sides sending requests. This file reads lines into checked messages, writes the
// messages `handler acp` sends, and keeps the requests it made of the editor. It knows
// nothing of sessions; agent.* does.
//
// Everything written here is serialized by Boost.JSON, which escapes control characters,
// so a message never holds a raw newline whatever its strings contain: one message is
// always one line.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace handler::acp::rpc {

// JSON-RPC's codes and ACP's own (agent-client-protocol schema, ErrorCode).
enum Code : int {
    kParseError = -32700,
    kInvalidRequest = -32600,
    kMethodNotFound = -32601,
    kInvalidParams = -32602,
    kInternalError = -32603,
    kAuthRequired = -32000,
    kResourceNotFound = -32002,
    kRequestCancelled = -32800,
};

struct Failure {
    int code = kInternalError;
    std::string message;
    boost::json::value data; // null: left out
};

// A request id as ACP allows it: a string, an integer or null.
using Id = boost::json::value;

struct Request {
    Id id;
    std::string method;
    boost::json::value params; // an object, an array, or null when absent
};
struct Notification {
    std::string method;
    boost::json::value params;
};
// An answer to one of our own requests.
struct Response {
    Id id;
    std::optional<boost::json::value> result;
    std::optional<Failure> error;
};
// A line that is no message: answered with `error` (to `id`, null when it was unreadable).
struct Invalid {
    Id id;
    Failure error;
};
using Message = std::variant<Request, Notification, Response, Invalid>;

// One line (without its newline) as a message: malformed JSON → -32700; JSON that is not
// a JSON-RPC 2.0 object (a batch, a wrong "jsonrpc", an id of another type, a method that
// is no string, params that are neither object nor array) → -32600 saying which.
Message parse(std::string_view line);

// The lines we write (without the newline).
std::string result_message(const Id& id, boost::json::value result);
std::string error_message(const Id& id, const Failure& failure);
std::string notification_message(std::string_view method, boost::json::object params);

// Splits stdin into lines, LF or CRLF. A line longer than the limit is never held whole:
// it is reported once as oversized and the rest of it, up to its newline, skipped.
class LineSplitter {
public:
    explicit LineSplitter(std::size_t limit_bytes) : limit_bytes_(limit_bytes) {}

    struct Line {
        std::string text;
        bool oversized = false;
    };
    std::vector<Line> feed(std::string_view bytes);
    // The input ended: a last line without a newline, if any.
    std::optional<Line> finish();

private:
    std::size_t limit_bytes_;
    std::string partial_;
    bool skipping_ = false;
};

// The only requests handler acp makes of an editor. An enum rather than a method name, so
// that nothing can make it call fs/*, terminal/* or any other method of the client, and
// nothing that came out of a container can choose one.
enum class ClientMethod { request_permission = 1 };
std::string_view method_name(ClientMethod method);

// Our requests to the editor that await an answer, by the ids we gave them (our own
// counter; the editor's ids are another space).
class OutgoingRequests {
public:
    using OnAnswer = std::function<void(const Response& answer)>;

    // The request's line; `on_answer` is called once with its answer, unless it is
    // withdrawn first.
    std::string start(ClientMethod method, boost::json::object params, OnAnswer on_answer,
                      std::int64_t& id_out);
    // Hands an answer to whoever waits for it; false for an id we are not waiting on (an
    // answer after a withdrawal, or to nothing we asked), which is then ignored.
    bool settle(const Response& answer);
    // Stops waiting for `id`: the `$/cancel_request` line to send, or nullopt when it was
    // not pending.
    std::optional<std::string> withdraw(std::int64_t id);
    std::size_t pending() const { return waiting_.size(); }

private:
    std::int64_t next_id_ = 0;
    std::map<std::int64_t, OnAnswer> waiting_;
};

// Thrown by ParamReader (inside acp only; the dispatcher answers it with -32602).
struct InvalidParams : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Typed access to a request's params that names the field it refuses: "params.cwd must
// be a string". Absent params read as an empty object.
class ParamReader {
public:
    explicit ParamReader(const boost::json::value& params, std::string prefix = "params");

    std::string string(std::string_view key) const;
    std::optional<std::string> optional_string(std::string_view key) const; // absent or null
    std::int64_t integer(std::string_view key) const;
    const boost::json::array& array(std::string_view key) const;
    const boost::json::array* optional_array(std::string_view key) const;  // absent or null
    const boost::json::object* optional_object(std::string_view key) const; // absent or null
    const boost::json::value* find(std::string_view key) const;
    std::string field(std::string_view key) const; // "params.cwd", for messages
    const boost::json::object& object() const { return *object_; }

private:
    const boost::json::object* object_;
    std::string prefix_;
};

} // namespace handler::acp::rpc
