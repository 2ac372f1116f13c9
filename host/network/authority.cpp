#include "network/authority.hpp"

#include <boost/url/authority_view.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <charconv>

namespace handler::network {

std::optional<std::uint16_t> parse_port(std::string_view digits) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || digits.size() > 5 || error != std::errc() ||
        end != digits.data() + digits.size() || value < 1 || value > 65535)
        return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

namespace {

Result<Authority> parse_ascii_authority(std::string_view text, PortPresence port) {
    auto refuse = [](std::string why) -> Error { return make_error(ErrorCode::invalid_argument, std::move(why)); };
    Authority authority;
    if (!text.starts_with('[') && std::count(text.begin(), text.end(), ':') > 1) {
        // Only a rule may leave its port out, and only there is "fd00::1" unambiguous.
        if (port == PortPresence::required)
            return refuse("an IPv6 address with a port goes in brackets, like [fd00::1]:443");
        authority.host = text;
        authority.ipv6 = true;
        return authority;
    }
    const auto parsed = boost::urls::parse_authority(text);
    if (!parsed) return refuse("it is not host, host:port or [IPv6]:port");
    if (parsed->has_userinfo()) return refuse("it names a user ('...@'); give the host alone");
    switch (parsed->host_type()) {
    case boost::urls::host_type::ipv4: authority.ipv4 = true; break;
    case boost::urls::host_type::ipv6: authority.ipv6 = true; break;
    case boost::urls::host_type::name: break;
    default: return refuse("only IPv6 addresses go in brackets");
    }
    const auto host = parsed->encoded_host_address();
    authority.host = std::string_view(host.data(), host.size());
    if (parsed->has_port()) {
        const auto digits = parsed->port();
        const auto number = parse_port(std::string_view(digits.data(), digits.size()));
        if (!number) return refuse("the port must be a number from 1 to 65535");
        authority.port = *number;
    } else if (port == PortPresence::required) {
        return refuse("it has no port (host:port)");
    }
    return authority;
}

} // namespace

Result<Authority> parse_authority(std::string_view text, PortPresence port) {
    const bool ascii =
        std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (ascii) return parse_ascii_authority(text, port);
    // RFC 3986 names are ASCII, but a rule may name a host in Unicode (canonical_name makes
    // its A-labels). Each byte of it stands in as an 'x' (no hex digit, so no address can
    // come of it) while Boost.URL splits the text; the host is then taken from the text.
    std::string masked(text);
    std::replace_if(masked.begin(), masked.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }, 'x');
    auto parsed = parse_ascii_authority(masked, port);
    if (!parsed) return parsed;
    parsed->host = text.substr(static_cast<std::size_t>(parsed->host.data() - masked.data()), parsed->host.size());
    return parsed;
}

} // namespace handler::network
