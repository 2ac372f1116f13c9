// plugin.toml parsing: a good manifest, and errors that name file:line:column and key.
#include "plugins/manifest.hpp"

#include "unit/plugins/plugin_test_support.hpp"

#include <gtest/gtest.h>

namespace {

using handler::ErrorCode;
using handler::plugins::parse_manifest;
using handler::testing::contains;

const std::filesystem::path kFile = "/plugins/x/plugin.toml";

std::string error_of(const std::string& text) {
    auto manifest = parse_manifest(text, kFile);
    if (manifest) return "(parsed)";
    EXPECT_EQ(manifest.error().code, ErrorCode::invalid_argument);
    return manifest.error().message;
}

const std::string kGood = R"(id = "x"
kind = "harness"
version = "0.1.0"
abi = "1.0"
library = "libx.so"
)";

TEST(ManifestTest, ParsesAGoodManifest) {
    auto manifest = parse_manifest(kGood + "name = \"X\"\ndescription = \"Does x\"\nfuture_key = 3\n", kFile);
    ASSERT_TRUE(manifest) << manifest.error().message;
    EXPECT_EQ(manifest->file, kFile);
    EXPECT_EQ(manifest->id, "x");
    EXPECT_EQ(manifest->kind, "harness");
    EXPECT_EQ(manifest->version, "0.1.0");
    EXPECT_EQ(manifest->abi, "1.0");
    EXPECT_EQ(manifest->abi_major, 1);
    EXPECT_EQ(manifest->abi_minor, 0);
    EXPECT_EQ(manifest->library, "/plugins/x/libx.so"); // beside the manifest
    EXPECT_EQ(manifest->name, "X");
    EXPECT_EQ(manifest->description, "Does x");
}

TEST(ManifestTest, NameDefaultsToTheId) {
    auto manifest = parse_manifest(kGood, kFile);
    ASSERT_TRUE(manifest);
    EXPECT_EQ(manifest->name, "x");
    EXPECT_EQ(manifest->description, "");
}

TEST(ManifestTest, TwoDigitMinorIsNotAFloat) {
    std::string text = kGood;
    text.replace(text.find("\"1.0\""), 5, "\"1.10\"");
    auto manifest = parse_manifest(text, kFile);
    ASSERT_TRUE(manifest);
    EXPECT_EQ(manifest->abi_minor, 10);
}

TEST(ManifestTest, SyntaxErrorNamesFileLineAndColumn) {
    const std::string message = error_of("id = \"x\"\nkind = harness\n");
    EXPECT_TRUE(contains(message, "/plugins/x/plugin.toml:2:8: ")) << message;
}

TEST(ManifestTest, WrongTypeNamesPositionAndKey) {
    std::string text = kGood;
    text.replace(text.find("\"1.0\""), 5, "1.0");
    const std::string message = error_of(text);
    EXPECT_TRUE(contains(message, "/plugins/x/plugin.toml:4:7: key 'abi': expected a string like \"1.0\", "
                                  "got a floating-point number"))
        << message;
}

TEST(ManifestTest, MalformedAbiNamesPositionAndKey) {
    std::string text = kGood;
    text.replace(text.find("\"1.0\""), 5, "\"one\"");
    const std::string message = error_of(text);
    EXPECT_TRUE(contains(message, "plugin.toml:4:7: key 'abi': expected \"major.minor\"")) << message;
}

TEST(ManifestTest, MissingKeyNamesFileAndKey) {
    const std::string message = error_of("id = \"x\"\nkind = \"addon\"\nversion = \"1\"\nabi = \"1.0\"\n");
    EXPECT_TRUE(contains(message, "/plugins/x/plugin.toml: missing key 'library'")) << message;
}

TEST(ManifestTest, UnknownKindIsRefused) {
    std::string text = kGood;
    text.replace(text.find("\"harness\""), 9, "\"widget\"");
    const std::string message = error_of(text);
    EXPECT_TRUE(contains(message, "plugin.toml:2:8: key 'kind': expected \"harness\" or \"addon\"")) << message;
}

TEST(ManifestTest, InvalidIdIsRefused) {
    std::string text = kGood;
    text.replace(0, 8, "id = \"../evil\"");
    const std::string message = error_of(text);
    EXPECT_TRUE(contains(message, "plugin.toml:1:6: key 'id'")) << message;
}

TEST(ManifestTest, LibraryMustStayInTheManifestsFolder) {
    std::string text = kGood;
    text.replace(text.find("\"libx.so\""), 9, "\"../other/libx.so\"");
    const std::string message = error_of(text);
    EXPECT_TRUE(contains(message, "plugin.toml:5:11: key 'library': must be a file name")) << message;
}

TEST(ManifestTest, EmptyRequiredStringIsRefused) {
    std::string text = kGood;
    text.replace(text.find("\"0.1.0\""), 7, "\"\"");
    const std::string message = error_of(text);
    EXPECT_TRUE(contains(message, "key 'version': must not be empty")) << message;
}

TEST(ManifestTest, UnreadableFileIsAnError) {
    auto manifest = handler::plugins::read_manifest("/nonexistent/handler/plugin.toml");
    ASSERT_FALSE(manifest);
    EXPECT_TRUE(contains(manifest.error().message, "/nonexistent/handler/plugin.toml"));
}

} // namespace
