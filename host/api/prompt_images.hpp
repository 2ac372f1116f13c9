// The images a client may put in a conversation's prompt (docs/conversations.md,
// "Images"). Each is checked before it is recorded or reaches a harness: its type is one
// the model APIs take, its base64 decodes, its first bytes are of that type (a client's
// label alone would let any file through as "an image"), and its size is within what the
// model APIs take.
#pragma once

#include "api/session_control.hpp"
#include "core/result.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace handler::api {

// Anthropic's limit per image, the smallest of the model APIs'.
inline constexpr std::size_t kMaxImageBytes = std::size_t{5} * 1024 * 1024;
inline constexpr std::size_t kMaxPromptImages = 8;
// The base64 of all of a prompt's images: each is an event every client of the
// conversation is sent, so less than eight of the largest.
inline constexpr std::size_t kMaxPromptImagesBytes = std::size_t{20} * 1024 * 1024;

// `where` names the image in an error ("images[0]").
Result<void> check_prompt_image(const PromptImage& image, std::string_view where);

// A file's bytes as an image of a prompt: its type read from its first bytes, its data in
// base64 (the CLI's `--image FILE`). invalid_argument when it is of none of the types,
// too_large above kMaxImageBytes; `where` names the file in the error.
Result<PromptImage> image_of_file(std::string_view bytes, std::string_view where);

} // namespace handler::api
