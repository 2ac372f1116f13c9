// handler/waist.hpp: small C++17 helpers that both sides of the plugin waist need
// (handler/plugin.hpp for plugins, handler/host.hpp for hosts include it). Header-only
// on purpose: the SDK ships no library, so a plugin links nothing of ours and the only
// thing the two sides share is the C layout in handler/sdk.h.
#ifndef HANDLER_WAIST_HPP
#define HANDLER_WAIST_HPP

#include "handler/sdk.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace handler::sdk {

// Borrows `text` for the duration of one call (rule 5): the caller keeps it alive.
inline hd_str to_str(std::string_view text) noexcept { return hd_str{text.data(), text.size()}; }

// {NULL, n} is read as empty whatever n says, so a zero-filled field is always safe.
inline std::string_view to_view(hd_str text) noexcept {
    return text.data == nullptr ? std::string_view() : std::string_view(text.data, text.size);
}

// Reads a struct written by the other side, which may have been compiled against an
// older (smaller) or newer (larger) header of the same major (rule 3): copies
// min(struct_size, sizeof(T)) bytes into a zero-filled T, so fields the writer did not
// know read as 0 / NULL and fields we do not know are ignored. NULL reads as all zero.
// The result keeps the writer's struct_size, so a caller can still tell how much the
// writer knew.
template <class T>
T read_struct(const T* source) noexcept {
    static_assert(std::is_trivially_copyable_v<T>, "ABI structs are plain C data");
    static_assert(offsetof(T, struct_size) == 0, "ABI structs start with struct_size");
    T copy;
    std::memset(&copy, 0, sizeof copy);
    if (source == nullptr) return copy;
    std::uint32_t writer_size = 0;
    std::memcpy(&writer_size, source, sizeof writer_size);
    std::memcpy(&copy, source, std::min<std::size_t>(writer_size, sizeof(T)));
    return copy;
}

// Writes `text` to a sink if there is one. A zero-filled hd_sink means "nobody
// listens", which is allowed everywhere.
inline void write_to(hd_sink sink, std::string_view text) noexcept {
    if (sink.append != nullptr && !text.empty()) sink.append(sink.context, to_str(text));
}

// An hd_sink that collects into a std::string. append runs on the other side's call
// stack, so it must not throw: a failed allocation is remembered and reported by
// failed() instead. `limit_bytes` bounds what the other side can make us hold; bytes
// beyond it are dropped and truncated() says so. Not movable: the hd_sink points at it.
class StringSink {
public:
    explicit StringSink(std::size_t limit_bytes = static_cast<std::size_t>(-1)) noexcept
        : limit_bytes_(limit_bytes) {}
    StringSink(const StringSink&) = delete;
    StringSink& operator=(const StringSink&) = delete;

    hd_sink sink() noexcept { return hd_sink{this, &StringSink::append}; }
    const std::string& text() const noexcept { return text_; }
    std::string take() noexcept { return std::move(text_); }
    bool truncated() const noexcept { return truncated_; }
    bool failed() const noexcept { return failed_; }

private:
    static void append(void* context, hd_str piece) noexcept {
        auto* self = static_cast<StringSink*>(context);
        std::string_view view = to_view(piece);
        const std::size_t room = self->limit_bytes_ - std::min(self->limit_bytes_, self->text_.size());
        if (view.size() > room) {
            view = view.substr(0, room);
            self->truncated_ = true;
        }
        try {
            self->text_.append(view);
        } catch (...) {
            self->failed_ = true;
        }
    }

    std::string text_;
    std::size_t limit_bytes_;
    bool truncated_ = false;
    bool failed_ = false;
};

// The name a person reads for a status ("OK", "NOT_FOUND", ...).
inline const char* status_name(hd_status status) noexcept {
    switch (status) {
    case HD_STATUS_OK: return "OK";
    case HD_STATUS_NOT_FOUND: return "NOT_FOUND";
    case HD_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case HD_STATUS_UNSUPPORTED: return "UNSUPPORTED";
    case HD_STATUS_DENIED: return "DENIED";
    case HD_STATUS_FAILED: return "FAILED";
    }
    return "UNKNOWN";
}

} // namespace handler::sdk

#endif // HANDLER_WAIST_HPP
