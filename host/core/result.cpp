#include "core/result.hpp"

namespace handler {

std::string_view to_string(ErrorCode code) {
    switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::conflict: return "conflict";
    case ErrorCode::unauthorized: return "unauthorized";
    case ErrorCode::forbidden: return "forbidden";
    case ErrorCode::too_large: return "too_large";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::incompatible: return "incompatible";
    case ErrorCode::internal: return "internal";
    }
    return "internal";
}

} // namespace handler
