#include "store/sqlite.hpp"

#include <sqlite3.h>

#include <utility>

namespace handler::store::sqlite {

Error make_sqlite_error(sqlite3* db, int code, std::string_view what) {
    const std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
    const std::string file = db != nullptr && sqlite3_db_filename(db, "main") != nullptr
                                 ? sqlite3_db_filename(db, "main")
                                 : "";
    const std::string where = file.empty() ? "the database" : "the database " + file;
    switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return make_error(ErrorCode::unavailable,
                          std::string(what) + ": " + where + " is busy (" + detail +
                              "); is a second handlerd running? Try again");
    case SQLITE_CONSTRAINT:
        return make_error(ErrorCode::conflict, std::string(what) + ": " + detail);
    case SQLITE_FULL:
        return make_error(ErrorCode::internal,
                          std::string(what) + ": the disk holding " + where + " is full");
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
        return make_error(ErrorCode::internal, std::string(what) + ": cannot write " + where +
                                                   " (" + detail + "); check its permissions");
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return make_error(ErrorCode::internal,
                          std::string(what) + ": " + where + " is damaged or not a database (" +
                              detail + "); restore it from a backup or move it away");
    default:
        return make_error(ErrorCode::internal, std::string(what) + ": " + detail);
    }
}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), statement_(std::exchange(other.statement_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
    if (this != &other) {
        sqlite3_finalize(statement_);
        db_ = std::exchange(other.db_, nullptr);
        statement_ = std::exchange(other.statement_, nullptr);
    }
    return *this;
}

Statement::~Statement() { sqlite3_finalize(statement_); }

// Bind errors (index out of range, out of memory) resurface from the next step(), whose
// error message SQLite keeps, so they are not checked here.
void Statement::bind(int index, std::int64_t value) { sqlite3_bind_int64(statement_, index, value); }

void Statement::bind(int index, std::string_view value) {
    sqlite3_bind_text64(statement_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                        SQLITE_UTF8);
}

void Statement::bind(int index, std::nullopt_t) { sqlite3_bind_null(statement_, index); }

void Statement::bind_blob(int index, std::string_view value) {
    sqlite3_bind_blob64(statement_, index, value.data(), value.size(), SQLITE_TRANSIENT);
}

Result<bool> Statement::step() {
    const int code = sqlite3_step(statement_);
    if (code == SQLITE_ROW) return true;
    if (code == SQLITE_DONE) return false;
    return make_sqlite_error(db_, code, "database statement failed");
}

Result<void> Statement::run() {
    for (;;) {
        auto row = step();
        if (!row) return row.take_error();
        if (!*row) return {};
    }
}

void Statement::reset() {
    sqlite3_reset(statement_);
}

bool Statement::is_null(int column) const {
    return sqlite3_column_type(statement_, column) == SQLITE_NULL;
}

std::int64_t Statement::integer(int column) const {
    return sqlite3_column_int64(statement_, column);
}

std::string Statement::text(int column) const {
    // Blob, not text: text would stop at an embedded NUL that a plugin value may hold.
    const void* data = sqlite3_column_blob(statement_, column);
    const int size = sqlite3_column_bytes(statement_, column);
    if (data == nullptr || size <= 0) return {};
    return std::string(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

std::optional<std::int64_t> Statement::optional_integer(int column) const {
    if (is_null(column)) return std::nullopt;
    return integer(column);
}

std::optional<std::string> Statement::optional_text(int column) const {
    if (is_null(column)) return std::nullopt;
    return text(column);
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), file_(std::move(other.file_)) {}

Database& Database::operator=(Database&& other) noexcept {
    if (this != &other) {
        sqlite3_close_v2(db_);
        db_ = std::exchange(other.db_, nullptr);
        file_ = std::move(other.file_);
    }
    return *this;
}

Database::~Database() { sqlite3_close_v2(db_); }

Result<Database> Database::open(const std::string& file) {
    Database db;
    db.file_ = file;
    const int code = sqlite3_open_v2(file.c_str(), &db.db_,
                                     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                         SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                                     nullptr);
    if (code != SQLITE_OK) {
        // sqlite3_open_v2 allocates a handle even on failure; it carries the message.
        return make_sqlite_error(db.db_, code, "cannot open the database " + file);
    }
    return db;
}

Result<void> Database::exec(std::string_view sql) {
    const std::string text(sql);
    const int code = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
    if (code != SQLITE_OK) return make_sqlite_error(db_, code, "database statement failed");
    return {};
}

Result<Statement> Database::prepare(std::string_view sql) {
    sqlite3_stmt* statement = nullptr;
    const int code = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &statement,
                                        nullptr);
    if (code != SQLITE_OK)
        return make_sqlite_error(db_, code, "cannot prepare a database statement");
    return Statement(db_, statement);
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int Database::changes() const { return sqlite3_changes(db_); }

Result<Transaction> Transaction::begin(Database& db, Kind kind) {
    auto begun = db.exec(kind == Kind::write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
    if (!begun) return begun.take_error();
    return Transaction(&db);
}

Transaction::~Transaction() {
    // Nothing to report to: the caller already has the error that made it give up.
    if (db_ != nullptr) (void)db_->exec("ROLLBACK");
}

Result<void> Transaction::commit() {
    Database* db = std::exchange(db_, nullptr);
    auto committed = db->exec("COMMIT");
    if (!committed) {
        (void)db->exec("ROLLBACK");
        return committed.take_error();
    }
    return {};
}

} // namespace handler::store::sqlite
