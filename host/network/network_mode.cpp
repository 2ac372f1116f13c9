#include "network/network_mode.hpp"

namespace handler::network {
namespace {

constexpr Mode kModes[] = {Mode::none, Mode::filtered, Mode::open, Mode::learn};

} // namespace

std::string_view to_string(Mode mode) {
    switch (mode) {
    case Mode::none: return "none";
    case Mode::filtered: return "filtered";
    case Mode::open: return "open";
    case Mode::learn: return "learn";
    }
    return "unknown";
}

bool may_hold(ModeHolder holder, Mode mode) {
    const bool known = mode == Mode::none || mode == Mode::filtered || mode == Mode::open || mode == Mode::learn;
    return known && (holder == ModeHolder::session || mode != Mode::learn);
}

std::optional<Mode> parse_mode(std::string_view text, ModeHolder holder) {
    for (const Mode mode : kModes)
        if (text == to_string(mode) && may_hold(holder, mode)) return mode;
    return std::nullopt;
}

std::vector<std::string> mode_names(ModeHolder holder) {
    std::vector<std::string> names;
    for (const Mode mode : kModes)
        if (may_hold(holder, mode)) names.emplace_back(to_string(mode));
    return names;
}

std::string mode_list(ModeHolder holder) {
    const auto names = mode_names(holder);
    std::string joined;
    for (std::size_t i = 0; i < names.size(); ++i)
        joined += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("'" + names[i] + "'");
    return joined;
}

} // namespace handler::network
