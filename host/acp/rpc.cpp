#include "acp/rpc.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <utility>

namespace handler::acp::rpc {
namespace json = boost::json;

namespace {

const json::object kEmptyObject;

Invalid invalid(Id id, int code, std::string message) {
    return Invalid{std::move(id), Failure{code, std::move(message), nullptr}};
}

bool valid_id(const json::value& id) { return id.is_string() || id.is_int64() || id.is_uint64() || id.is_null(); }

json::value failure_json(const Failure& failure) {
    json::object error{{"code", failure.code}, {"message", failure.message}};
    if (!failure.data.is_null()) error["data"] = failure.data;
    return error;
}

std::string_view type_name(const json::value& value) {
    switch (value.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
    }
    return "something else";
}

} // namespace

Message parse(std::string_view line) {
    boost::system::error_code error;
    json::value value = json::parse(line, error);
    if (error)
        return invalid(nullptr, kParseError, "not valid JSON: " + error.message());
    if (value.is_array())
        return invalid(nullptr, kInvalidRequest, "batches are not part of ACP: send one message per line");
    if (!value.is_object())
        return invalid(nullptr, kInvalidRequest, "a message must be a JSON object");
    auto& object = value.as_object();

    const json::value* id = object.if_contains("id");
    const bool has_id = id != nullptr;
    Id id_value = has_id && valid_id(*id) ? *id : json::value(nullptr);
    const auto* version = object.if_contains("jsonrpc");
    if (version == nullptr || !version->is_string() || version->as_string() != "2.0")
        return invalid(id_value, kInvalidRequest, "\"jsonrpc\" must be \"2.0\"");
    if (has_id && !valid_id(*id))
        return invalid(nullptr, kInvalidRequest, "\"id\" must be a string, an integer or null");

    const json::value* method = object.if_contains("method");
    if (method == nullptr) {
        // No method: an answer to one of our requests.
        const auto* result = object.if_contains("result");
        const auto* failure = object.if_contains("error");
        if (!has_id || (result == nullptr) == (failure == nullptr))
            return invalid(id_value, kInvalidRequest,
                           "a message needs a \"method\" (a request or notification), or an \"id\" "
                           "with either \"result\" or \"error\" (a response)");
        Response response{id_value, std::nullopt, std::nullopt};
        if (result != nullptr) {
            response.result = *result;
        } else {
            Failure parsed{kInternalError, "the editor answered with an error", nullptr};
            if (const auto* error_object = failure->if_object()) {
                if (const auto* code = error_object->if_contains("code"); code && code->is_int64())
                    parsed.code = static_cast<int>(code->as_int64());
                if (const auto* text = error_object->if_contains("message"); text && text->is_string())
                    parsed.message = std::string(text->as_string());
            }
            response.error = std::move(parsed);
        }
        return response;
    }
    if (!method->is_string())
        return invalid(id_value, kInvalidRequest, "\"method\" must be a string");
    json::value params = nullptr;
    if (const auto* given = object.if_contains("params")) {
        if (!given->is_object() && !given->is_array())
            return invalid(id_value, kInvalidRequest, "\"params\" must be an object or an array");
        params = *given;
    }
    std::string name(method->as_string());
    if (!has_id) return Notification{std::move(name), std::move(params)};
    return Request{std::move(id_value), std::move(name), std::move(params)};
}

std::string result_message(const Id& id, json::value result) {
    return json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

std::string error_message(const Id& id, const Failure& failure) {
    return json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"error", failure_json(failure)}});
}

std::string notification_message(std::string_view method, json::object params) {
    return json::serialize(json::object{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

std::vector<LineSplitter::Line> LineSplitter::feed(std::string_view bytes) {
    std::vector<Line> lines;
    while (!bytes.empty()) {
        const auto newline = bytes.find('\n');
        const std::string_view piece = bytes.substr(0, newline);
        if (skipping_) {
            // The rest of an oversized line: dropped up to its end.
        } else if (partial_.size() + piece.size() > limit_bytes_) {
            partial_.clear();
            skipping_ = true;
            lines.push_back({{}, true});
        } else {
            partial_.append(piece);
        }
        if (newline == std::string_view::npos) break;
        bytes.remove_prefix(newline + 1);
        if (!skipping_) {
            if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
            if (!partial_.empty()) lines.push_back({std::move(partial_), false});
        }
        partial_.clear();
        skipping_ = false;
    }
    return lines;
}

std::optional<LineSplitter::Line> LineSplitter::finish() {
    if (skipping_ || partial_.empty()) return std::nullopt;
    Line last{std::move(partial_), false};
    partial_.clear();
    return last;
}

std::string_view method_name(ClientMethod method) {
    switch (method) {
    case ClientMethod::request_permission: return "session/request_permission";
    }
    return "session/request_permission";
}

std::string OutgoingRequests::start(ClientMethod method, json::object params, OnAnswer on_answer,
                                    std::int64_t& id_out) {
    id_out = next_id_++;
    waiting_.emplace(id_out, std::move(on_answer));
    return json::serialize(json::object{
        {"jsonrpc", "2.0"}, {"id", id_out}, {"method", method_name(method)}, {"params", std::move(params)}});
}

bool OutgoingRequests::settle(const Response& answer) {
    if (!answer.id.is_int64()) return false;
    auto found = waiting_.find(answer.id.as_int64());
    if (found == waiting_.end()) return false;
    OnAnswer on_answer = std::move(found->second);
    waiting_.erase(found);
    on_answer(answer);
    return true;
}

std::optional<std::string> OutgoingRequests::withdraw(std::int64_t id) {
    if (waiting_.erase(id) == 0) return std::nullopt;
    return notification_message("$/cancel_request", json::object{{"requestId", id}});
}

ParamReader::ParamReader(const json::value& params, std::string prefix)
    : object_(&kEmptyObject), prefix_(std::move(prefix)) {
    if (params.is_null()) return;
    if (!params.is_object()) throw InvalidParams(prefix_ + " must be an object");
    object_ = &params.as_object();
}

std::string ParamReader::field(std::string_view key) const { return prefix_ + "." + std::string(key); }

const json::value* ParamReader::find(std::string_view key) const { return object_->if_contains(key); }

std::string ParamReader::string(std::string_view key) const {
    const auto* value = find(key);
    if (value == nullptr) throw InvalidParams(field(key) + " is required");
    if (!value->is_string())
        throw InvalidParams(field(key) + " must be a string, not " + std::string(type_name(*value)));
    return std::string(value->as_string());
}

std::optional<std::string> ParamReader::optional_string(std::string_view key) const {
    const auto* value = find(key);
    if (value == nullptr || value->is_null()) return std::nullopt;
    if (!value->is_string())
        throw InvalidParams(field(key) + " must be a string, not " + std::string(type_name(*value)));
    return std::string(value->as_string());
}

std::int64_t ParamReader::integer(std::string_view key) const {
    const auto* value = find(key);
    if (value == nullptr) throw InvalidParams(field(key) + " is required");
    if (value->is_int64()) return value->as_int64();
    if (value->is_uint64() && value->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        return static_cast<std::int64_t>(value->as_uint64());
    throw InvalidParams(field(key) + " must be an integer, not " + std::string(type_name(*value)));
}

const json::array& ParamReader::array(std::string_view key) const {
    const auto* value = find(key);
    if (value == nullptr) throw InvalidParams(field(key) + " is required");
    if (!value->is_array())
        throw InvalidParams(field(key) + " must be an array, not " + std::string(type_name(*value)));
    return value->as_array();
}

const json::array* ParamReader::optional_array(std::string_view key) const {
    const auto* value = find(key);
    if (value == nullptr || value->is_null()) return nullptr;
    return &array(key);
}

const json::object* ParamReader::optional_object(std::string_view key) const {
    const auto* value = find(key);
    if (value == nullptr || value->is_null()) return nullptr;
    if (!value->is_object())
        throw InvalidParams(field(key) + " must be an object, not " + std::string(type_name(*value)));
    return &value->as_object();
}

} // namespace handler::acp::rpc
