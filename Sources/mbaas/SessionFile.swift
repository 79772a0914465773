import Foundation
import MBaaSCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sessions saved between CLI runs: one JSON file, mode 0600 in a 0700 directory, written atomically
/// (a new 0600 file renamed over the old one), keyed by the backend URL without its secret.
///
/// Concurrent runs sharing the file (parallel `mbaas auth login`s) do not lose each other's sessions: every
/// change is a read-modify-write under an exclusive `flock` on `<file>.lock` (0600, next to the file), and the
/// new content replaces the file atomically, so a reader never sees a half-written file.
///
/// ```json
/// {"sqlite:/home/me/demo.db": {"token": "…", "userId": "…", "username": "alice", "expiresAt": "2025-…Z"}}
/// ```
struct SessionFile {
    let url: URL

    /// `$XDG_CONFIG_HOME/mbaas/sessions.json`, else `~/.config/mbaas/sessions.json`.
    static func defaultURL() -> URL {
        let env = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = env["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg)
        } else {
            base = URL(fileURLWithPath: env["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".config")
        }
        return base.appendingPathComponent("mbaas").appendingPathComponent("sessions.json")
    }

    /// The key of a backend: its URL without the secret; relative `sqlite:` paths made absolute so the same
    /// database gets the same key from any directory.
    static func key(for url: BackendURL) -> String {
        var u = url
        u.secret = nil
        if u.scheme == "sqlite", u.host == nil, u.path != ":memory:", !u.path.hasPrefix("/") {
            u.path = URL(fileURLWithPath: u.path).standardizedFileURL.path
        }
        return u.description
    }

    func session(for key: String) throws(MBaaSError) -> Session? {
        try load()[key]
    }

    /// Saves (or, for `nil`, removes) the session of a key.
    func set(_ session: Session?, for key: String) throws(MBaaSError) {
        try withLock { () throws(MBaaSError) in
            var all = try load()
            all[key] = session
            try save(all)
        }
    }

    /// The lock file serialising changes between processes.
    var lockURL: URL { url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + ".lock") }

    /// Runs `body` holding an exclusive `flock` on ``lockURL`` (released when the descriptor closes, also when
    /// the process dies).
    func withLock<T>(_ body: () throws(MBaaSError) -> T) throws(MBaaSError) -> T {
        try ensureDirectory()
        let fd = open(lockURL.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw MBaaSError(.localIO, "cannot open the session lock file \(lockURL.path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw MBaaSError(.localIO, "cannot lock the session file \(lockURL.path): \(String(cString: strerror(errno)))")
            }
        }
        return try body()
    }

    private func ensureDirectory() throws(MBaaSError) {
        let dir = url.deletingLastPathComponent()
        do {
            if !FileManager.default.fileExists(atPath: dir.path) {
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                chmod(dir.path, 0o700)
            }
        } catch {
            throw MBaaSError(.localIO, "cannot create \(dir.path): \(MBaaSError.describe(error))")
        }
    }

    func load() throws(MBaaSError) -> [String: Session] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [:] }
        let json: JSON
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw MBaaSError(.localIO, "the session file \(url.path) cannot be read: \(MBaaSError.describe(error))")
        }
        do { json = try JSON.parse(data) } catch {
            throw MBaaSError(.invalidRequest, "the session file \(url.path) is not valid JSON (\(error)); delete it and log in again")
        }
        guard let object = json.objectValue else {
            throw MBaaSError(.invalidRequest, "the session file \(url.path) is not a JSON object; delete it and log in again")
        }
        var sessions: [String: Session] = [:]
        for (key, value) in object {
            guard let token = value["token"]?.stringValue, let userId = value["userId"]?.stringValue else { continue }
            var extras: [String: String] = [:]
            for (k, v) in value["extras"]?.objectValue ?? JSONObject() { extras[k] = v.stringValue }
            sessions[key] = Session(
                token: token, userId: userId, username: value["username"]?.stringValue,
                expiresAt: value["expiresAt"]?.stringValue.flatMap(ISO8601.parse),
                refreshToken: value["refreshToken"]?.stringValue, extras: extras)
        }
        return sessions
    }

    func save(_ sessions: [String: Session]) throws(MBaaSError) {
        var object = JSONObject()
        for key in sessions.keys.sorted() {
            let s = sessions[key]!
            var o: JSONObject = ["token": .string(s.token), "userId": .string(s.userId)]
            if let username = s.username { o["username"] = .string(username) }
            if let expires = s.expiresAt { o["expiresAt"] = .string(ISO8601.format(expires)) }
            if let refresh = s.refreshToken { o["refreshToken"] = .string(refresh) }
            if !s.extras.isEmpty { o["extras"] = .object(JSONObject(sorting: s.extras.mapValues(JSON.string))) }
            object[key] = .object(o)
        }
        try writeAtomically(JSON.object(object).data([.pretty]) + Data("\n".utf8))
    }

    private func writeAtomically(_ data: Data) throws(MBaaSError) {
        try ensureDirectory()
        // Created 0600 from the start: the tokens are never readable by others, not even for a moment.
        try writePrivateFile(data, to: url, what: "the session file")
    }
}
