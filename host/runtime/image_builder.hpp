// Builds the base image every session container starts from, without any container
// registry (these machines reach none): mmdebstrap makes a Debian root filesystem as the
// normal user (--mode=unshare, subordinate ids), `podman import` turns it into an image.
// The host's CA bundle goes into the image, so HTTPS works behind a TLS-inspecting proxy.
// Images are tagged by a hash of their recipe, so an unchanged recipe is never rebuilt
// and a changed one (packages, suite, mirror, CA content) always is. docs/images.md.
#pragma once

#include "core/paths.hpp"
#include "core/result.hpp"
#include "runtime/container_runtime.hpp"
#include "runtime/process.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace handler::runtime {

inline constexpr const char* kBaseImageRepository = "localhost/handler-base";
inline constexpr const char* kDefaultMirror = "http://deb.debian.org/debian";
// Where the host's CA bundle lands inside the image; update-ca-certificates then adds it
// to the image's /etc/ssl/certs/ca-certificates.crt.
inline constexpr const char* kImageCaPath = "/usr/local/share/ca-certificates/handler-host-ca.crt";

struct BaseImageRecipe {
    // trixie: bookworm's nodejs is 18, too old for the Node.js harnesses.
    std::string suite = "trixie";
    std::string variant = "apt"; // mmdebstrap --variant: Essential packages plus apt
    std::vector<std::string> packages;
    std::string mirror = kDefaultMirror;
    // Added to the image's trusted CAs; empty: none. Its content is part of the hash.
    std::filesystem::path ca_bundle;
};

// ca-certificates, curl, git, nodejs, npm, python3, ripgrep.
std::vector<std::string> default_base_packages();

// The first Debian archive URI in apt sources text (one-line `deb URI SUITE ...` or
// deb822 `URIs:`), skipping security and snapshot archives; empty when there is none.
std::string mirror_from_apt_sources(std::string_view text);

// The base recipe for this host: default packages, the mirror this host's apt uses
// (/etc/apt/sources.list and sources.list.d, else deb.debian.org), and the host's CA
// bundle where one of the usual places has it.
BaseImageRecipe default_base_recipe();

// The canonical text the hash is taken over: one line per field, packages sorted and
// deduplicated, and the SHA-256 of the CA bundle's content (a changed CA must rebuild).
// An error when a field is malformed or the CA bundle cannot be read.
Result<std::string> recipe_text(const BaseImageRecipe& recipe);
Result<std::string> recipe_hash(const BaseImageRecipe& recipe); // 64 hex digits
// localhost/handler-base:<first 12 hex digits of the hash>
Result<std::string> base_image_ref(const BaseImageRecipe& recipe);

std::string sha256_hex(std::string_view data);

// $XDG_CACHE_HOME/handler/build, else ~/.cache/handler/build.
std::filesystem::path default_build_dir(const GetEnv& getenv);

// One line of progress for a person ("building base image ...: this takes about a minute"),
// or of what the build printed (podman's steps, npm's output): printable UTF-8, at most
// kMaxProgressLineBytes and a marker. Called on the building thread.
using ProgressCallback = std::function<void(const std::string& line)>;
inline constexpr std::size_t kMaxProgressLineBytes = 2000;

struct ImageBuilderOptions {
    // Private (0700) folder for the root filesystem tarball and the CA copy; empty:
    // default_build_dir() of the process environment.
    std::filesystem::path build_dir;
    std::string mmdebstrap = "mmdebstrap";
    // A slow mirror can take many minutes; a hung one must still end.
    std::int64_t timeout_ms = 15 * 60 * 1000;
};

// What a harness or addon plugin adds on top of the base image: its install steps.
struct LayerRecipe {
    std::string name;    // the plugin's id: part of the image's name
    std::string version; // the plugin's version: a new version is a new image
    std::vector<std::pair<std::string, std::string>> env; // ENV, in order
    std::vector<std::string> run_steps;                    // /bin/sh -c, in order
};

// The Containerfile for `recipe` on `base`: FROM base, a label naming the plugin, ENV
// lines, then one exec-form RUN per step (JSON, so a step is passed byte for byte, with
// no Containerfile quoting of its own). An error for a malformed name or variable.
Result<std::string> containerfile_text(const std::string& base, const LayerRecipe& recipe);
// localhost/handler-<name>:<12 hex digits of the Containerfile's SHA-256>: a new base
// (its tag is its hash), a new plugin version or new steps each make a new image, and an
// image that running sessions use is never replaced under them.
Result<std::string> layer_image_ref(const std::string& base, const LayerRecipe& recipe);

// The image of `recipe` on `base`, built with `podman build` in `build_dir` (private)
// unless one of its tag exists. The base must be here (`handler setup` builds it).
Result<std::string> ensure_layer_image(ContainerRuntime& runtime, const std::filesystem::path& build_dir,
                                       const std::string& base, const LayerRecipe& recipe,
                                       const ProgressCallback& progress = {});

class ImageBuilder {
public:
    ImageBuilder(CommandRunner& runner, ContainerRuntime& runtime,
                 ImageBuilderOptions options = {});

    // The base image's reference, building it first if no image of that tag exists.
    // The tarball is deleted whether the build worked or not.
    Result<std::string> ensure_base_image(const BaseImageRecipe& recipe,
                                          const ProgressCallback& progress = {});

    // The mmdebstrap argv that writes `tarball`; `ca_copy` is the CA bundle's copy in the
    // build folder (ignored when the recipe has no CA). Public so tests and docs show it.
    Result<std::vector<std::string>> mmdebstrap_command(const BaseImageRecipe& recipe,
                                                        const std::filesystem::path& tarball,
                                                        const std::filesystem::path& ca_copy) const;

private:
    CommandRunner& runner_;
    ContainerRuntime& runtime_;
    ImageBuilderOptions options_;
};

} // namespace handler::runtime
