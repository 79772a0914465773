import Foundation
public import MBaaSCore

/// Opens ``LocalBackend``s from `sqlite:` URLs.
///
/// | URL | database |
/// |---|---|
/// | `sqlite:demo.db` | `demo.db` relative to the current directory |
/// | `sqlite:///var/data/app.db` | the absolute path `/var/data/app.db` |
/// | `sqlite::memory:` | a private in-memory database |
///
/// Options: `?files=DIR` puts file bytes in `DIR` instead of `<database>-files/`; the database remembers it, so
/// later URLs need not repeat it (an empty `?files=` or a different directory is `invalidRequest`).
/// ``LocalBackend/Options/openMode`` chooses read-only, read-write or create (the CLI opens read-only for
/// reads). With ``BackendContext/readOnly`` (a dry run) a missing database file is not created: an empty in-memory
/// database stands in.
public struct LocalBackendFactory: BackendFactory {
    public let schemes = ["sqlite"]
    public let adapterName = "local"
    /// No HTTP at all; its URLs name a file, never a host (`sqlite:PATH`, `sqlite:///ABSOLUTE/PATH`).
    public var wireProfile: WireProfile { WireProfile.generic.merging(WireProfile(requiresHost: false)) }
    public let options: LocalBackend.Options

    public init(options: LocalBackend.Options = LocalBackend.Options()) {
        self.options = options
    }

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        try url.requireKnownOptions(["files"], adapter: "sqlite")
        let path = try Self.databasePath(url)
        var options = self.options
        if let dir = url.option("files") {
            guard !dir.isEmpty else {
                throw MBaaSError(.invalidRequest, "?files= is empty; give ?files=DIR or leave it out")
            }
            options.filesDirectory = URL(fileURLWithPath: dir)
        }
        // Opened only to read (a dry run): a database that does not exist yet is not created; an empty in-memory one
        // stands in for it.
        if context.readOnly, path != ":memory:", !FileManager.default.fileExists(atPath: path) {
            options.filesDirectory = nil
            return try LocalBackend(path: ":memory:", context: context, options: options)
        }
        return try LocalBackend(path: path, context: context, options: options)
    }

    /// The database path a URL names; `sqlite://host/...` and empty paths are `invalidRequest`.
    public static func databasePath(_ url: BackendURL) throws(MBaaSError) -> String {
        guard url.scheme == "sqlite" else {
            throw MBaaSError(.invalidRequest, "the Local backend opens sqlite: URLs, not \(url.scheme):")
        }
        if let host = url.host {
            throw MBaaSError(.invalidRequest,
                             "sqlite://\(host)… names a host; use sqlite:RELATIVE/PATH, sqlite:///ABSOLUTE/PATH or sqlite::memory:")
        }
        guard !url.path.isEmpty else {
            throw MBaaSError(.invalidRequest, "the sqlite: URL has no path; use sqlite:FILE.db or sqlite::memory:")
        }
        return url.path
    }
}
