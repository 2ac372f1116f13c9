// The web page's files (api/ui_assets.hpp): the fixed set, Content-Types, gzip, and no
// way to reach a file outside the folder.
#include "api/ui_assets.hpp"

#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace handler::api {
namespace {

namespace fs = std::filesystem;
using handler::testing::TempDir;

void write(const fs::path& path, std::string_view text) {
    std::ofstream(path, std::ios::binary) << text;
}

Request get(std::string target, std::string accept_encoding = {}) {
    Request request;
    request.method = "GET";
    request.target = std::move(target);
    request.accept_encoding = std::move(accept_encoding);
    request.over_tcp = true;
    return request;
}

class UiAssetsTest : public ::testing::Test {
protected:
    void SetUp() override {
        page_ = root_.path() / "ui";
        fs::create_directories(page_);
        write(page_ / "index.html", "<!doctype html>");
        write(page_ / "index.html.gz", "GZ-INDEX");
        write(page_ / "app.js", "export {}");
        write(page_ / "app.css", "body{}");
        write(page_ / "app.js.LEGAL.txt", "MIT");
        write(page_ / ".hidden.js", "no");
        write(page_ / "notes.md", "no: not a served type");
        write(root_.path() / "secret.js", "outside");
        fs::create_symlink(root_.path() / "secret.js", page_ / "link.js");
        fs::create_directories(page_ / "sub");
        write(page_ / "sub" / "deep.js", "no: not at the top");
    }

    UiAssets load() {
        auto loaded = UiAssets::load(page_);
        EXPECT_TRUE(loaded.ok()) << loaded.error().message;
        return loaded ? std::move(*loaded) : UiAssets();
    }

    TempDir root_;
    fs::path page_;
};

TEST_F(UiAssetsTest, ServesThePlainFilesWithTheirTypes) {
    const UiAssets assets = load();
    EXPECT_EQ(assets.size(), 4u);
    const Response index = serve_ui_asset(assets, get("/"), "/", "");
    EXPECT_EQ(index.status, 200u);
    EXPECT_EQ(index.body, "<!doctype html>");
    EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
    EXPECT_EQ(serve_ui_asset(assets, get("/index.html"), "/index.html", "").body, "<!doctype html>");
    EXPECT_EQ(serve_ui_asset(assets, get("/app.js"), "/app.js", "").content_type,
              "text/javascript; charset=utf-8");
    EXPECT_EQ(serve_ui_asset(assets, get("/app.css"), "/app.css", "").content_type, "text/css; charset=utf-8");
    EXPECT_EQ(serve_ui_asset(assets, get("/app.js.LEGAL.txt"), "/app.js.LEGAL.txt", "").body, "MIT");
}

TEST_F(UiAssetsTest, NothingOutsideTheSetIsReachable) {
    const UiAssets assets = load();
    for (const char* path : {"/../secret.js", "/link.js", "/.hidden.js", "/notes.md", "/sub/deep.js",
                             "/sub", "/app.js/", "//app.js", "/./app.js", "/app.js%00", "/APP.JS",
                             "/index.html.gz", "/%2e%2e/secret.js", "app.js", ""}) {
        const Response response = serve_ui_asset(assets, get(path), path, "");
        EXPECT_EQ(response.status, 404u) << path;
        EXPECT_EQ(response.body.find("outside"), std::string::npos) << path;
    }
}

TEST_F(UiAssetsTest, GzipOnlyWhenTheBrowserTakesIt) {
    const UiAssets assets = load();
    const Response zipped = serve_ui_asset(assets, get("/", "gzip, deflate, br"), "/", "");
    EXPECT_EQ(zipped.body, "GZ-INDEX");
    EXPECT_EQ(zipped.headers.at("Content-Encoding"), "gzip");
    EXPECT_EQ(zipped.headers.at("Vary"), "Accept-Encoding");
    const Response plain = serve_ui_asset(assets, get("/", "br"), "/", "");
    EXPECT_EQ(plain.body, "<!doctype html>");
    EXPECT_EQ(plain.headers.count("Content-Encoding"), 0u);
    // No .gz beside it: the plain file, even to a gzip browser.
    EXPECT_EQ(serve_ui_asset(assets, get("/app.js", "gzip"), "/app.js", "").body, "export {}");
}

TEST(UiAcceptEncoding, ReadsCodingsAndWeights) {
    EXPECT_TRUE(accepts_gzip("gzip"));
    EXPECT_TRUE(accepts_gzip("deflate, GZIP;q=0.5"));
    EXPECT_TRUE(accepts_gzip("*"));
    EXPECT_FALSE(accepts_gzip(""));
    EXPECT_FALSE(accepts_gzip("br, deflate"));
    EXPECT_FALSE(accepts_gzip("gzip;q=0"));
    EXPECT_FALSE(accepts_gzip("gzip;q=0.000"));
    EXPECT_TRUE(accepts_gzip("gzip;q=0.001"));
    EXPECT_FALSE(accepts_gzip("xgzip"));
}

TEST_F(UiAssetsTest, OnlyGetIsAllowed) {
    const UiAssets assets = load();
    Request post = get("/");
    post.method = "POST";
    const Response response = serve_ui_asset(assets, post, "/", "");
    EXPECT_EQ(response.status, 405u);
    EXPECT_EQ(response.headers.at("Allow"), "GET");
}

TEST_F(UiAssetsTest, AMissingFolderOrIndexIsAnErrorThatSaysWhatToDo) {
    auto missing = UiAssets::load(root_.path() / "nowhere");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("HANDLER_BUILD_UI"), std::string::npos) << missing.error().message;
    fs::remove(page_ / "index.html");
    auto no_index = UiAssets::load(page_);
    ASSERT_FALSE(no_index.ok());
    EXPECT_NE(no_index.error().message.find("index.html"), std::string::npos);

    const UiAssets none;
    const Response response = serve_ui_asset(none, get("/"), "/", "built without its page");
    EXPECT_EQ(response.status, 404u);
    EXPECT_NE(response.body.find("built without its page"), std::string::npos);
}

} // namespace
} // namespace handler::api
