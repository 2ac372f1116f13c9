// Errors are values at module boundaries (STYLE.md): every fallible call in host/
// returns Result<T>. Exceptions stay inside a module and never cross the plugin waist.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace handler {

// What went wrong, coarse enough to map onto an HTTP status and a CLI exit code.
enum class ErrorCode {
    invalid_argument = 1, // bad input from the caller: JSON, TOML, CLI argument
    not_found,            // an id or name that does not exist
    conflict,             // already exists, or violates a rule (context mismatch)
    unauthorized,         // missing or wrong API token
    forbidden,            // refused by policy (Host/Origin guard, plugin refused)
    too_large,            // a body or file over its limit
    unavailable,          // the daemon or a dependency is not reachable
    incompatible,         // versions that do not fit (plugin ABI, settings format)
    internal,             // a bug or an I/O failure; the message says which
};

std::string_view to_string(ErrorCode code);

struct Error {
    ErrorCode code = ErrorCode::internal;
    // A sentence a person can act on: what happened, where, and what to do.
    std::string message;
};

inline Error make_error(ErrorCode code, std::string message) {
    return Error{code, std::move(message)};
}

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : storage_(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}

    bool ok() const { return storage_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { assert(ok()); return std::get<0>(storage_); }
    const T& value() const& { assert(ok()); return std::get<0>(storage_); }
    T&& value() && { assert(ok()); return std::get<0>(std::move(storage_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { assert(!ok()); return std::get<1>(storage_); }
    Error&& take_error() { assert(!ok()); return std::get<1>(std::move(storage_)); }

private:
    std::variant<T, Error> storage_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), failed_(true) {}

    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const Error& error() const { assert(failed_); return error_; }
    Error&& take_error() { assert(failed_); return std::move(error_); }

private:
    Error error_;
    bool failed_ = false;
};

} // namespace handler
