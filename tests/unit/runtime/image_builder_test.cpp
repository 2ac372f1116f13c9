#include "runtime/image_builder.hpp"

#include "core/paths.hpp"
#include "support/fake_command_runner.hpp"
#include "support/fake_container_runtime.hpp"
#include "support/fakes.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>

namespace handler::runtime {
namespace {
using testing::contains;
using testing::FakeCommandRunner;
using testing::FakeContainerRuntime;
using testing::TempDir;

class ImageBuilderTest : public ::testing::Test {
protected:
    ImageBuilderTest() {
        recipe_.packages = default_base_packages();
        recipe_.mirror = "http://deb.debian.org/debian";
        recipe_.ca_bundle = dir_.write("host-ca.crt", "-----BEGIN CERTIFICATE-----\nAAAA\n"
                                                      "-----END CERTIFICATE-----\n");
        // What mmdebstrap does: write the tarball (its argv's second-to-last element).
        runner_.on_run = [this](const CommandRequest& request) {
            if (write_tarball_) std::ofstream(request.argv.at(request.argv.size() - 2)) << "rootfs";
            std::error_code ignored;
            ca_copy_seen_ = std::filesystem::exists(build_dir() / ("handler-base-" + tag() + "-ca.crt"),
                                                    ignored);
        };
    }

    std::filesystem::path build_dir() const { return dir_ / "cache/handler/build"; }
    std::string ref() const { return base_image_ref(recipe_).value(); }
    std::string tag() const { return ref().substr(ref().find(':') + 1); }
    std::filesystem::path tarball() const { return build_dir() / ("handler-base-" + tag() + ".tar"); }

    Result<std::string> ensure() {
        ImageBuilder builder(runner_, runtime_, ImageBuilderOptions{build_dir(), "mmdebstrap", 900'000});
        return builder.ensure_base_image(recipe_, [this](const std::string& line) {
            progress_.push_back(line);
        });
    }

    TempDir dir_;
    BaseImageRecipe recipe_;
    FakeCommandRunner runner_;
    FakeContainerRuntime runtime_;
    std::vector<std::string> progress_;
    bool write_tarball_ = true;
    bool ca_copy_seen_ = false;
};

TEST_F(ImageBuilderTest, HashIsStableAndCoversTheCanonicalRecipe) {
    const auto hash = recipe_hash(recipe_).value();
    EXPECT_EQ(hash.size(), 64u);
    EXPECT_EQ(recipe_hash(recipe_).value(), hash);
    // The same recipe written differently (order, duplicates) is the same image.
    BaseImageRecipe shuffled = recipe_;
    std::reverse(shuffled.packages.begin(), shuffled.packages.end());
    shuffled.packages.push_back("git");
    EXPECT_EQ(recipe_hash(shuffled).value(), hash);
    // Only the CA's content counts, not where it lies.
    BaseImageRecipe moved = recipe_;
    moved.ca_bundle = dir_.write("elsewhere/bundle.pem", read_file(recipe_.ca_bundle).value());
    EXPECT_EQ(recipe_hash(moved).value(), hash);

    const auto text = recipe_text(recipe_).value();
    EXPECT_TRUE(contains(text, "suite trixie\n")) << text;
    EXPECT_TRUE(contains(text, "variant apt\n")) << text;
    EXPECT_TRUE(contains(text, "package ca-certificates\npackage curl\n")) << text;
    EXPECT_TRUE(contains(text, "ca-sha256 " + sha256_hex(read_file(recipe_.ca_bundle).value()))) << text;
    EXPECT_EQ(ref(), std::string("localhost/handler-base:") + hash.substr(0, 12));
}

TEST_F(ImageBuilderTest, KnownSha256) {
    EXPECT_EQ(sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(ImageBuilderTest, HashChangesWithPackagesSuiteMirrorAndCaContent) {
    const auto hash = recipe_hash(recipe_).value();
    auto changed = [&](auto change) {
        BaseImageRecipe other = recipe_;
        change(other);
        return recipe_hash(other).value() != hash;
    };
    EXPECT_TRUE(changed([](BaseImageRecipe& r) { r.packages.push_back("jq"); }));
    EXPECT_TRUE(changed([](BaseImageRecipe& r) { r.packages.pop_back(); }));
    EXPECT_TRUE(changed([](BaseImageRecipe& r) { r.suite = "bookworm"; }));
    EXPECT_TRUE(changed([](BaseImageRecipe& r) { r.variant = "minbase"; }));
    EXPECT_TRUE(changed([](BaseImageRecipe& r) { r.mirror = "http://mirror.example/debian"; }));
    EXPECT_TRUE(changed([](BaseImageRecipe& r) { r.ca_bundle.clear(); }));
    // The same path with new content (the proxy's CA was renewed) must rebuild.
    dir_.write("host-ca.crt", "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n");
    EXPECT_NE(recipe_hash(recipe_).value(), hash);
}

TEST_F(ImageBuilderTest, MalformedRecipesAndUnreadableCaAreErrors) {
    auto error_of = [&](auto change) {
        BaseImageRecipe other = recipe_;
        change(other);
        auto hash = recipe_hash(other);
        EXPECT_FALSE(hash);
        return hash ? std::string() : hash.error().message;
    };
    EXPECT_TRUE(contains(error_of([](BaseImageRecipe& r) { r.suite = "Trixie; rm"; }), "suite"));
    EXPECT_TRUE(contains(error_of([](BaseImageRecipe& r) { r.variant = "huge"; }), "variant"));
    EXPECT_TRUE(contains(error_of([](BaseImageRecipe& r) { r.packages.push_back("--force"); }),
                         "'--force' is not a Debian package name"));
    EXPECT_TRUE(contains(error_of([](BaseImageRecipe& r) { r.mirror = "ftp://x y"; }), "mirror"));
    EXPECT_TRUE(contains(error_of([this](BaseImageRecipe& r) { r.ca_bundle = dir_ / "none.crt"; }),
                         "cannot read the CA bundle"));
}

TEST_F(ImageBuilderTest, ExistingImageIsNotRebuilt) {
    runtime_.images.insert(ref());
    auto built = ensure();
    ASSERT_TRUE(built) << built.error().message;
    EXPECT_EQ(*built, ref());
    EXPECT_TRUE(runner_.requests.empty());
    EXPECT_TRUE(runtime_.imports.empty());
    ASSERT_EQ(progress_.size(), 1u);
    EXPECT_TRUE(contains(progress_[0], "is up to date")) << progress_[0];
}

TEST_F(ImageBuilderTest, MissingImageIsBuiltWithMmdebstrapAndImported) {
    auto built = ensure();
    ASSERT_TRUE(built) << built.error().message;
    EXPECT_EQ(*built, ref());

    ASSERT_EQ(runner_.requests.size(), 1u);
    const auto ca_copy = build_dir() / ("handler-base-" + tag() + "-ca.crt");
    const std::vector<std::string> expected = {
        "mmdebstrap",
        "--mode=unshare",
        "--variant=apt",
        "--include=ca-certificates,curl,git,nodejs,npm,python3,ripgrep",
        "--customize-hook=upload " + ca_copy.string() +
            " /usr/local/share/ca-certificates/handler-host-ca.crt",
        "--customize-hook=chroot \"$1\" update-ca-certificates",
        "trixie",
        tarball().string(),
        "http://deb.debian.org/debian"};
    EXPECT_EQ(runner_.last_argv(), expected);
    EXPECT_EQ(runner_.requests[0].timeout_ms, 900'000);
    EXPECT_TRUE(ca_copy_seen_) << "the CA copy must exist while mmdebstrap runs";

    ASSERT_EQ(runtime_.imports.size(), 1u);
    EXPECT_EQ(runtime_.imports[0].tarball, tarball());
    EXPECT_EQ(runtime_.imports[0].reference, ref());
    EXPECT_TRUE(runtime_.imports[0].tarball_existed);
    EXPECT_TRUE(runtime_.images.count(ref()));

    // Nothing left behind; the build folder is private.
    EXPECT_FALSE(std::filesystem::exists(tarball()));
    EXPECT_FALSE(std::filesystem::exists(ca_copy));
    struct stat info {};
    ASSERT_EQ(::stat(build_dir().c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);

    ASSERT_GE(progress_.size(), 3u);
    EXPECT_TRUE(contains(progress_[0], "building base image " + ref() +
                                           " (trixie, 7 packages)")) << progress_[0];
    EXPECT_TRUE(contains(progress_[0], "about a minute")) << progress_[0];
    EXPECT_TRUE(contains(progress_.back(), "is ready")) << progress_.back();

    // Built once: the next call finds it.
    runner_.requests.clear();
    ASSERT_TRUE(ensure());
    EXPECT_TRUE(runner_.requests.empty());
}

TEST_F(ImageBuilderTest, WithoutCaThereAreNoHooks) {
    recipe_.ca_bundle.clear();
    ASSERT_TRUE(ensure());
    for (const auto& argument : runner_.last_argv())
        EXPECT_FALSE(contains(argument, "hook")) << argument;
}

TEST_F(ImageBuilderTest, MmdebstrapFailureNamesTheCommandAndItsStderrTailAndCleansUp) {
    std::string err;
    for (int i = 0; i < 50; ++i) err += "I: line " + std::to_string(i) + "\n";
    err += "E: Unable to locate package nodejs\n";
    runner_.answer(1, "", err);
    auto built = ensure();
    ASSERT_FALSE(built);
    const auto& message = built.error().message;
    EXPECT_TRUE(contains(message, "`mmdebstrap --mode=unshare")) << message;
    EXPECT_TRUE(contains(message, "failed (exit 1)")) << message;
    EXPECT_TRUE(contains(message, "E: Unable to locate package nodejs")) << message;
    EXPECT_FALSE(contains(message, "I: line 5\n")) << "only the tail: " << message;
    EXPECT_TRUE(runtime_.imports.empty());
    EXPECT_FALSE(std::filesystem::exists(tarball()));
    EXPECT_TRUE(std::filesystem::is_empty(build_dir()));
}

TEST_F(ImageBuilderTest, MissingMmdebstrapSaysHowToInstallIt) {
    runner_.fail(make_error(ErrorCode::not_found, "mmdebstrap: not found on PATH"));
    auto built = ensure();
    ASSERT_FALSE(built);
    EXPECT_EQ(built.error().code, ErrorCode::not_found);
    EXPECT_TRUE(contains(built.error().message, "apt-get install mmdebstrap")) << built.error().message;
}

TEST_F(ImageBuilderTest, NoTarballAfterSuccessIsAnError) {
    write_tarball_ = false;
    auto built = ensure();
    ASSERT_FALSE(built);
    EXPECT_TRUE(contains(built.error().message, "wrote no")) << built.error().message;
    EXPECT_TRUE(runtime_.imports.empty());
}

TEST_F(ImageBuilderTest, ImportFailureIsReportedAndTheTarballRemoved) {
    runtime_.fail_next("import_image",
                       make_error(ErrorCode::unavailable, "`podman import` failed (exit 125): no space"));
    auto built = ensure();
    ASSERT_FALSE(built);
    EXPECT_TRUE(contains(built.error().message, "importing the base image failed")) << built.error().message;
    EXPECT_TRUE(contains(built.error().message, "no space")) << built.error().message;
    ASSERT_EQ(runtime_.imports.size(), 1u);
    EXPECT_TRUE(runtime_.imports[0].tarball_existed);
    EXPECT_FALSE(std::filesystem::exists(tarball()));
    EXPECT_TRUE(runtime_.images.empty());
}

TEST_F(ImageBuilderTest, ImageExistsFailureStopsBeforeBuilding) {
    runtime_.fail_next("image_exists", make_error(ErrorCode::unavailable, "podman is broken"));
    auto built = ensure();
    ASSERT_FALSE(built);
    EXPECT_TRUE(runner_.requests.empty());
}

// A plugin's layer: its steps go to podman byte for byte (exec-form RUN, JSON-quoted),
// and anything that would change the image changes its tag.
TEST(LayerImage, ContainerfileQuotesStepsAndTheTagFollowsEverything) {
    LayerRecipe recipe{"claude-code", "0.1.0", {{"DISABLE_AUTOUPDATER", "1"}, {"LITERAL", "$HOME \"q\" \\n"}},
                       {"npm install -g @anthropic-ai/claude-code@2.1.328", "echo \"quoted\" 'and' $HOME\nnext"}};
    auto text = containerfile_text("localhost/handler-base:aaa", recipe);
    ASSERT_TRUE(text.ok()) << text.error().message;
    EXPECT_EQ(*text, "FROM localhost/handler-base:aaa\n"
                     "LABEL io.handler.recipe=\"claude-code 0.1.0\"\n"
                     "ENV DISABLE_AUTOUPDATER=\"1\"\n"
                     "ENV LITERAL=\"\\$HOME \\\"q\\\" \\\\n\"\n"
                     "RUN [\"/bin/sh\",\"-c\",\"npm install -g @anthropic-ai/claude-code@2.1.328\"]\n"
                     "RUN [\"/bin/sh\",\"-c\",\"echo \\\"quoted\\\" 'and' $HOME\\nnext\"]\n");
    const std::string ref = layer_image_ref("localhost/handler-base:aaa", recipe).value();
    EXPECT_TRUE(ref.starts_with("localhost/handler-claude-code:")) << ref;
    EXPECT_EQ(ref.size(), std::string("localhost/handler-claude-code:").size() + 12);
    EXPECT_NE(layer_image_ref("localhost/handler-base:bbb", recipe).value(), ref);
    auto newer = recipe;
    newer.version = "0.2.0";
    EXPECT_NE(layer_image_ref("localhost/handler-base:aaa", newer).value(), ref);
    auto changed = recipe;
    changed.run_steps[0] = "npm install -g @anthropic-ai/claude-code@2.1.329";
    EXPECT_NE(layer_image_ref("localhost/handler-base:aaa", changed).value(), ref);
    EXPECT_EQ(layer_image_ref("localhost/handler-base:aaa", recipe).value(), ref);
}

TEST(LayerImage, MalformedNamesAndVariablesAreRefused) {
    EXPECT_FALSE(containerfile_text("base", LayerRecipe{"Bad Name", "1", {}, {"true"}}));
    EXPECT_FALSE(containerfile_text("base", LayerRecipe{"../x", "1", {}, {"true"}}));
    EXPECT_FALSE(containerfile_text("base", LayerRecipe{"ok", "1", {{"A=B", "x"}}, {"true"}}));
    EXPECT_FALSE(containerfile_text("base", LayerRecipe{"ok", "1", {{"1X", "x"}}, {"true"}}));
    EXPECT_FALSE(containerfile_text("base", LayerRecipe{"ok", "1", {}, {""}}));
    EXPECT_FALSE(containerfile_text("base\nRUN evil", LayerRecipe{"ok", "1", {}, {"true"}}));
    EXPECT_FALSE(containerfile_text("base", LayerRecipe{"ok", "1\"\nRUN evil", {}, {"true"}}));
    EXPECT_FALSE(containerfile_text("base", LayerRecipe{"ok", "", {}, {"true"}}));
    EXPECT_FALSE(containerfile_text("base", LayerRecipe{"ok", "1", {{"A", "line\nRUN evil"}}, {"true"}}));
    auto refused = containerfile_text("base", LayerRecipe{"ok", "1", {{"NO SPACE", "x"}}, {}});
    ASSERT_FALSE(refused);
    EXPECT_TRUE(contains(refused.error().message, "NO SPACE")) << refused.error().message;
}

TEST(LayerImage, BuiltOnlyWhenMissingAndOnlyOnAPresentBase) {
    TempDir dir;
    FakeContainerRuntime runtime;
    LayerRecipe recipe{"pi", "0.1.0", {}, {"npm install -g pi@1"}};
    auto missing_base = ensure_layer_image(runtime, dir / "build", "localhost/handler-base:aaa", recipe);
    ASSERT_FALSE(missing_base);
    EXPECT_TRUE(contains(missing_base.error().message, "run `handler setup`")) << missing_base.error().message;
    EXPECT_TRUE(runtime.builds.empty());

    runtime.images.insert("localhost/handler-base:aaa");
    std::vector<std::string> progress;
    auto built = ensure_layer_image(runtime, dir / "build", "localhost/handler-base:aaa", recipe,
                                    [&](const std::string& line) { progress.push_back(line); });
    ASSERT_TRUE(built) << built.error().message;
    ASSERT_EQ(runtime.builds.size(), 1u);
    EXPECT_EQ(runtime.builds[0].reference, *built);
    EXPECT_EQ(runtime.builds[0].containerfile, containerfile_text("localhost/handler-base:aaa", recipe).value());
    ASSERT_EQ(progress.size(), 2u);
    EXPECT_TRUE(contains(progress[1], "is ready")) << progress[1];
    EXPECT_TRUE(std::filesystem::is_empty(dir / "build")) << "the build folder is cleaned up";
    EXPECT_EQ(ensure_layer_image(runtime, dir / "build", "localhost/handler-base:aaa", recipe).value(), *built);
    EXPECT_EQ(runtime.builds.size(), 1u);
}

// What the build prints reaches the progress as lines, whatever pieces it came in; a RUN
// step's output (the packages it installs write it) is made printable and bounded.
TEST(LayerImage, TheBuildsOutputIsItsProgressLineByLineAndBounded) {
    TempDir dir;
    FakeContainerRuntime runtime;
    runtime.images.insert("localhost/handler-base:aaa");
    runtime.build_output = "STEP 1/2: FROM localhost/handler-base:aaa\r\nnpm \x1b[31mERR\x1b[0m! 404\n\n" +
                           std::string(5000, 'x') + "\nlast line without end";
    std::vector<std::string> progress;
    auto built = ensure_layer_image(runtime, dir / "build", "localhost/handler-base:aaa",
                                    LayerRecipe{"pi", "0.1.0", {}, {"npm install -g pi@1"}},
                                    [&](const std::string& line) { progress.push_back(line); });
    ASSERT_TRUE(built) << built.error().message;
    ASSERT_EQ(progress.size(), 6u);
    EXPECT_TRUE(contains(progress[0], "building image")) << progress[0];
    EXPECT_EQ(progress[1], "STEP 1/2: FROM localhost/handler-base:aaa");
    EXPECT_EQ(progress[2], "npm  [31mERR [0m! 404");
    EXPECT_EQ(progress[3], std::string(kMaxProgressLineBytes, 'x') + " [...]");
    EXPECT_EQ(progress[4], "last line without end");
    EXPECT_TRUE(contains(progress[5], "is ready")) << progress[5];
}

// A new version of a plugin is a new image; the older ones go once it is built, except
// one that a running session's container uses, which stays under it.
TEST(LayerImage, ANewVersionRemovesTheOlderImagesNoSessionUses) {
    TempDir dir;
    FakeContainerRuntime runtime;
    runtime.images.insert("localhost/handler-base:aaa");
    runtime.images.insert("localhost/handler-pilot:elsewhere"); // another plugin's repository
    const auto build = [&](const std::string& version) {
        return ensure_layer_image(runtime, dir / "build", "localhost/handler-base:aaa",
                                  LayerRecipe{"pi", version, {}, {"npm install -g pi@" + version}});
    };
    auto first = build("0.1.0");
    ASSERT_TRUE(first) << first.error().message;
    auto second = build("0.2.0");
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_EQ(runtime.images.count(*first), 0u) << "no session used it";
    EXPECT_EQ(runtime.images.count("localhost/handler-pilot:elsewhere"), 1u);

    runtime::ContainerSpec session;
    session.session_id = "s_1";
    session.image = *second;
    session.argv = {"sleep", "infinity"};
    ASSERT_TRUE(runtime.create_and_start(session));
    std::vector<std::string> progress;
    auto third = ensure_layer_image(runtime, dir / "build", "localhost/handler-base:aaa",
                                    LayerRecipe{"pi", "0.3.0", {}, {"npm install -g pi@0.3.0"}},
                                    [&](const std::string& line) { progress.push_back(line); });
    ASSERT_TRUE(third) << third.error().message;
    EXPECT_EQ(runtime.images.count(*second), 1u) << "a running session's image stays";
    EXPECT_EQ(runtime.images.count(*third), 1u);
    ASSERT_FALSE(progress.empty());
    EXPECT_TRUE(contains(progress.back(), "kept the older image " + *second)) << progress.back();
}

TEST(ImageBuilderMirror, FromAptSources) {
    EXPECT_EQ(mirror_from_apt_sources("Types: deb\n"
                                      "# http://snapshot.debian.org/archive/debian/2025\n"
                                      "URIs: http://deb.debian.org/debian/\n"
                                      "Suites: bookworm\n\n"
                                      "Types: deb\nURIs: http://deb.debian.org/debian-security\n"),
              "http://deb.debian.org/debian");
    EXPECT_EQ(mirror_from_apt_sources("deb http://security.debian.org/ bookworm-security main\n"
                                      "deb-src http://src.example/debian bookworm main\n"
                                      "deb [arch=amd64 signed-by=/k.gpg] https://mirror.example/debian bookworm main\n"),
              "https://mirror.example/debian");
    EXPECT_EQ(mirror_from_apt_sources("# nothing\n"), "");
}

TEST(ImageBuilderPaths, BuildDirFollowsXdgCacheHome) {
    std::map<std::string, std::string> env = {{"HOME", "/home/alice"}};
    auto getenv = [&env](const char* name) -> const char* {
        auto found = env.find(name);
        return found == env.end() ? nullptr : found->second.c_str();
    };
    EXPECT_EQ(default_build_dir(getenv), "/home/alice/.cache/handler/build");
    env["XDG_CACHE_HOME"] = "/var/cache/alice";
    EXPECT_EQ(default_build_dir(getenv), "/var/cache/alice/handler/build");
}

TEST(ImageBuilderDefaults, DefaultRecipeIsValid) {
    const auto recipe = default_base_recipe();
    EXPECT_EQ(recipe.suite, "trixie");
    EXPECT_EQ(recipe.packages, default_base_packages());
    EXPECT_TRUE(recipe_hash(recipe)) << recipe_hash(recipe).error().message;
}

} // namespace
} // namespace handler::runtime
