public import MBaaSCore
import Foundation

/// Opens `replica:PATH` URLs: the replica file at PATH, its remote opened from the URL stored in it (by
/// `mbaas sync init` or ``ReplicaBackend/open(path:remote:remoteURL:configuration:cipher:context:retry:sleep:)``) through
/// `registry`.
///
/// # Contract
/// - A missing file is `notFound` (create replicas with `mbaas sync init`); a file that is not a replica is
///   `invalidRequest`, untouched; a replica without a stored remote is `invalidRequest`.
/// - The key of encrypted fields comes from ``cipher`` (the CLI reads `MBAAS_REPLICA_KEY` or `--key-file`).
public struct ReplicaBackendFactory: BackendFactory {
    public let schemes = ["replica"]
    public let adapterName = "replica"
    public var wireProfile: WireProfile { WireProfile.generic.merging(WireProfile(requiresHost: false)) }
    /// Opens the remotes; it need not know the `replica` scheme (a replica of a replica is refused).
    public let registry: BackendRegistry
    /// The key of encrypted fields, asked for when a replica is opened (so that a bad key is the open's error).
    public let cipher: @Sendable () throws(MBaaSError) -> ReplicaCipher?

    public init(registry: BackendRegistry, cipher: ReplicaCipher? = nil) {
        self.registry = registry
        self.cipher = { cipher }
    }

    /// A factory whose key comes from `key` at each open (``ReplicaCipher/fromEnvironment()`` for the CLI).
    public init(registry: BackendRegistry, key: @escaping @Sendable () throws(MBaaSError) -> ReplicaCipher?) {
        self.registry = registry
        self.cipher = key
    }

    /// The file path of a `replica:PATH` URL (`replica:memos.replica`, `replica:///abs/path`).
    public static func path(_ url: BackendURL) throws(MBaaSError) -> String {
        if let host = url.host {
            throw MBaaSError(.invalidRequest, "replica://\(host)… names a host; use replica:RELATIVE/PATH or replica:///ABSOLUTE/PATH")
        }
        guard !url.path.isEmpty else { throw MBaaSError(.invalidRequest, "the replica: URL names no file: use replica:PATH") }
        return url.path
    }

    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        let path = try Self.path(url)
        guard let remoteURL = try ReplicaBackend.storedRemoteURL(path: path) else {
            throw MBaaSError(.invalidRequest, "the replica '\(path)' has no remote: run mbaas sync init replica:\(path) --remote URL")
        }
        if remoteURL.lowercased().hasPrefix("replica:") {
            throw MBaaSError(.invalidRequest, "the replica '\(path)' names another replica as its remote; a remote is a server backend")
        }
        var remoteContext = context
        remoteContext.readOnly = false
        let remote = try await registry.open(remoteURL, context: remoteContext)
        return try await ReplicaBackend.open(path: path, remote: remote, cipher: try cipher(), context: context)
    }
}
