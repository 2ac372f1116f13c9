// handler/host.hpp: header-only helpers for the side that loads plugins (handlerd, and
// any test or tool that plays host). Brings in handler/waist.hpp: to_str/to_view for
// hd_str, StringSink (a std::string-backed hd_sink) and read_struct (rule 3).
#ifndef HANDLER_HOST_HPP
#define HANDLER_HOST_HPP

#include "handler/waist.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace handler::sdk {

// "major.minor", as plugin.toml writes it.
inline std::string abi_string(std::uint16_t major, std::uint16_t minor) {
    return std::to_string(major) + "." + std::to_string(minor);
}

// Rules 1 and 2: a host speaks every minor up to its own within its major. Returns
// std::nullopt when a plugin built for plugin_major.plugin_minor can load, else the end
// of a sentence that names both versions and the fix, meant to follow
// "plugin 'x' (/path/libx.so) was ", e.g.
//   "built for plugin ABI 2.0, but this handlerd speaks 1.0: rebuild it against SDK
//    1.x or upgrade handlerd"
inline std::optional<std::string> abi_incompatibility(std::uint16_t plugin_major,
                                                      std::uint16_t plugin_minor,
                                                      std::uint16_t host_major = HD_ABI_MAJOR,
                                                      std::uint16_t host_minor = HD_ABI_MINOR) {
    if (plugin_major == host_major && plugin_minor <= host_minor) return std::nullopt;
    std::string message = "built for plugin ABI " + abi_string(plugin_major, plugin_minor) +
                          ", but this handlerd speaks " + abi_string(host_major, host_minor) + ": ";
    const std::string sdk_line = "SDK " + std::to_string(host_major) + ".x";
    if (plugin_major > host_major)
        message += "rebuild it against " + sdk_line + " or upgrade handlerd";
    else if (plugin_major < host_major)
        message += "rebuild it against " + sdk_line + " (this handlerd no longer speaks " +
                   std::to_string(plugin_major) + ".x)";
    else
        message += "upgrade handlerd, or rebuild it against SDK " +
                   abi_string(host_major, host_minor);
    return message;
}

} // namespace handler::sdk

#endif // HANDLER_HOST_HPP
