#include "api/ui_assets.hpp"

#include "core/text.hpp"
#include "api/server_guards.hpp"
#include "core/paths.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <sys/stat.h>

namespace handler::api {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kIndex = "index.html";

bool plain_name(std::string_view name) {
    if (name.empty() || name.size() > 128 || name.front() == '.') return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '-' || c == '_';
    });
}

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

using text::iequals;
using text::trim;

// A regular file (not a link: lstat) of at most the limit, read whole.
Result<std::string> read_plain_file(const fs::path& path) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
        return make_error(ErrorCode::not_found, path.string() + " is not a regular file");
    if (static_cast<std::size_t>(info.st_size) > UiAssets::kMaxFileBytes)
        return make_error(ErrorCode::too_large,
                          path.string() + " is over " + std::to_string(UiAssets::kMaxFileBytes) +
                              " bytes; that is not the page build.mjs writes");
    return read_file(path);
}

} // namespace

std::string_view UiAssets::content_type_for(std::string_view name) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kTypes{{
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".txt", "text/plain; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".woff2", "font/woff2"},
        {".webmanifest", "application/manifest+json"},
    }};
    for (const auto& [extension, type] : kTypes)
        if (ends_with(name, extension)) return type;
    return {};
}

Result<UiAssets> UiAssets::load(const fs::path& dir) {
    UiAssets assets;
    assets.dir_ = dir;
    std::error_code error;
    if (!fs::is_directory(dir, error))
        return make_error(ErrorCode::not_found,
                          "the web page's folder " + dir.string() +
                              " does not exist: build with -DHANDLER_BUILD_UI=ON (the default) "
                              "and install, or set [ui] dir in config.toml");
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
        const std::string name = it->path().filename().string();
        if (!plain_name(name) || ends_with(name, ".gz") || content_type_for(name).empty()) continue;
        if (assets.files_.size() >= kMaxFiles) {
            spdlog::warn("ui: {} holds more than {} files; the rest are not served", dir.string(), kMaxFiles);
            break;
        }
        auto body = read_plain_file(it->path());
        if (!body) {
            spdlog::warn("ui: not serving {}: {}", name, body.error().message);
            continue;
        }
        Asset asset{std::string(content_type_for(name)), std::move(*body), {}};
        if (auto gzip = read_plain_file(it->path().string() + ".gz"); gzip) asset.gzip = std::move(*gzip);
        assets.files_.emplace(name, std::move(asset));
    }
    if (error)
        return make_error(ErrorCode::internal, "cannot list " + dir.string() + ": " + error.message());
    if (assets.files_.find(kIndex) == assets.files_.end())
        return make_error(ErrorCode::not_found, "the web page's folder " + dir.string() +
                                                    " has no index.html; build it again (ninja "
                                                    "handler_ui) or reinstall");
    return assets;
}

const UiAssets::Asset* UiAssets::find(std::string_view path) const {
    if (path.empty() || path.front() != '/') return nullptr;
    path.remove_prefix(1);
    if (path.empty()) path = kIndex;
    const auto found = files_.find(path);
    return found == files_.end() ? nullptr : &found->second;
}

bool accepts_gzip(std::string_view header) {
    while (!header.empty()) {
        const std::size_t comma = header.find(',');
        std::string_view item = trim(header.substr(0, comma));
        header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
        const std::size_t semicolon = item.find(';');
        const std::string_view coding = trim(item.substr(0, semicolon));
        if (!iequals(coding, "gzip") && coding != "*") continue;
        if (semicolon == std::string_view::npos) return true;
        std::string_view parameter = trim(item.substr(semicolon + 1));
        if (parameter.size() < 2 || (parameter[0] != 'q' && parameter[0] != 'Q') || parameter[1] != '=')
            return true;
        parameter.remove_prefix(2);
        // q=0, q=0.0, q=0.000: refused; any other weight takes it.
        const bool zero = !parameter.empty() && parameter.front() == '0' &&
                          parameter.find_first_not_of("0.", 0) == std::string_view::npos;
        if (!zero) return true;
    }
    return false;
}

Response serve_ui_asset(const UiAssets& assets, const Request& request, std::string_view path,
                        std::string_view missing_reason) {
    if (request.method != "GET") {
        Response response = error_response(ErrorCode::invalid_argument,
                                           request.method + " is not allowed on the web page's "
                                                            "files; use GET");
        response.status = 405;
        response.headers["Allow"] = "GET";
        return response;
    }
    const UiAssets::Asset* asset = assets.find(path);
    if (asset == nullptr) {
        if (assets.size() == 0)
            return error_response(ErrorCode::not_found,
                                  "handlerd has no web page to serve: " + std::string(missing_reason));
        return error_response(ErrorCode::not_found,
                              "there is no page file " + std::string(path.substr(0, 100)) +
                                  " (the page is at /)");
    }
    Response response;
    response.content_type = asset->content_type;
    // The names carry no content hash, so a browser must ask again after an upgrade;
    // loopback makes that cheap.
    response.headers["Cache-Control"] = "no-cache";
    response.headers["Vary"] = "Accept-Encoding";
    if (!asset->gzip.empty() && accepts_gzip(request.accept_encoding)) {
        response.body = asset->gzip;
        response.headers["Content-Encoding"] = "gzip";
    } else {
        response.body = asset->body;
    }
    return response;
}

} // namespace handler::api
