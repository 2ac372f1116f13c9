// The web page's files (docs/web-ui.md), read once at start from the folder build.mjs
// wrote: <prefix>/share/handler/ui next to the running handlerd (builtin_ui_dir()), or
// [ui] dir in config.toml. Transport-free, like the routes.
//
// Only a fixed set is served: the regular files directly in that folder whose names are
// plain (letters, digits, '.', '-', '_', not starting with '.') and whose extension has a
// known Content-Type. A request names one of them exactly or gets 404, so no path, no
// "..", no encoded slash and no symbolic link can reach another file.
#pragma once

#include "api/http_types.hpp"
#include "core/result.hpp"

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace handler::api {

class UiAssets {
public:
    struct Asset {
        std::string content_type;
        std::string body;
        std::string gzip; // NAME.gz from the build, when there was one; else empty
    };

    // A file over this is refused at load: the page's bundle is far smaller, and a folder
    // pointed at the wrong place must not fill handlerd's memory.
    static constexpr std::size_t kMaxFileBytes = std::size_t{16} * 1024 * 1024;
    static constexpr std::size_t kMaxFiles = 64;

    // No page (an empty set, every request 404 with `missing` as the reason).
    UiAssets() = default;

    // Error{not_found} when the folder or its index.html is missing, with what to do.
    static Result<UiAssets> load(const std::filesystem::path& dir);

    // "/" is index.html. nullptr for anything that is not one of the files.
    const Asset* find(std::string_view path) const;
    std::size_t size() const { return files_.size(); }
    const std::filesystem::path& dir() const { return dir_; }

    // The Content-Type for a file name's extension, or empty when it is not served.
    static std::string_view content_type_for(std::string_view name);

private:
    std::filesystem::path dir_;
    std::map<std::string, Asset, std::less<>> files_; // by name, without the leading '/'
};

// True when an Accept-Encoding header value takes gzip (a "gzip" or "*" coding whose
// q is not 0).
bool accepts_gzip(std::string_view accept_encoding);

// GET of a page file: the file, gzip when the browser takes it, or 404 saying
// why there is no page. Other methods get 405.
Response serve_ui_asset(const UiAssets& assets, const Request& request, std::string_view path,
                        std::string_view missing_reason);

} // namespace handler::api
