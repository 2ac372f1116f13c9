// The database schema as numbered migrations (docs/domain-model.md). A migration, once
// released, is never edited: a change is a new entry at the end. Each one runs in its
// own transaction together with its row in schema_migrations, so a crash leaves the
// database at the previous version or the next, never between.
#pragma once

#include "core/clock.hpp"
#include "core/result.hpp"
#include "store/sqlite.hpp"

#include <span>
#include <string_view>

namespace handler::store {

// kMigrations[i] takes the schema from version i to i + 1.
std::span<const std::string_view> migrations();

// Brings `db` up to the newest version in `list`. A database whose version is newer than
// the list is refused (incompatible): a newer handlerd wrote it, and an older one must not
// write tables it does not understand.
Result<int> migrate(sqlite::Database& db, std::span<const std::string_view> list,
                    const Clock& clock);

// The version recorded in schema_migrations (0 for a new database).
Result<int> schema_version(sqlite::Database& db);

} // namespace handler::store
