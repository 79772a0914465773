public import Foundation
import Logging

/// A whole backend: records, files and users of one app on one server, as one client instance.
///
/// Open one with ``BackendRegistry/open(_:context:)`` from a ``BackendURL``, or with an adapter's own
/// initializer. Instances are independent: a migration holds a source and a target open at once, each with its
/// own session, transport and logger. Nothing in MBaaSKit is a global.
///
/// # Implementing an adapter
/// Conform a type to `Backend` (object store, file store, authenticator), declare ``capabilities`` honestly, and
/// throw ``MBaaSError/Kind/unsupported`` for the rest; then add a ``BackendFactory`` so URLs open it. The
/// conformance suite (`MBaaSConformance`) checks the contracts stated on each protocol.
public protocol Backend: ObjectStore, FileStore, Authenticator, BackendAdministration {
    /// The adapter's short name, as reports show it (lowercase, e.g. `local`).
    var adapterName: String { get }
    var capabilities: Capabilities { get }
    /// Releases connections and files. Calls after `close()` are undefined.
    func close() async
}

extension Backend {
    public func close() async {}
}

/// What an adapter is given when it is opened: the HTTP transport, the clock, the logger.
///
/// Tests and the conformance harness inject a replaying or recording transport and a pinned clock here; the
/// CLI uses the defaults. Adapters must read the time only through ``now`` (signed requests depend on it) and
/// send every HTTP request through ``transport``.
public struct BackendContext: Sendable {
    public var transport: any HTTPTransport
    public var clock: @Sendable () -> Date
    public var logger: Logger
    /// Where a local adapter may keep files when its URL gives no path (the CLI's data directory).
    public var dataDirectory: URL?
    /// Asks for an administrative identity for calls made without a session, where the adapter has one and the
    /// URL's credentials allow it (an embedded store's owner; a server's superuser). Migrations and admin tools set
    /// it; apps never should. Adapters without such an identity ignore it and act as anonymous.
    public var administrative: Bool
    /// The caller will only read (a dry run, a verification): opening must create nothing (no database file, no
    /// schema, no collection). Writes may still be refused or not, as the adapter documents.
    public var readOnly: Bool

    public init(
        transport: any HTTPTransport = URLSessionTransport(), clock: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "mbaas", factory: { _ in SwiftLogNoOpLogHandler() }), dataDirectory: URL? = nil,
        administrative: Bool = false, readOnly: Bool = false
    ) {
        self.transport = transport
        self.clock = clock
        self.logger = logger
        self.dataDirectory = dataDirectory
        self.administrative = administrative
        self.readOnly = readOnly
    }

    public var now: Date { clock() }
}

/// Opens backends of one adapter from URLs.
public protocol BackendFactory: Sendable {
    /// URL schemes this factory opens, without the `+http` suffix.
    var schemes: [String] { get }
    /// The adapter name reports use.
    var adapterName: String { get }
    func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend
    /// URL options that give the client an identity no shipped app holds (an app admin's client credentials,
    /// acting as a superuser). Conformance refuses a cassette whose backend URL carries one: the suite proves
    /// what an app's users can do. Empty by default.
    var administrativeOptions: Set<String> { get }
    /// The adapter's wire protocol as record/replay tools need it (secret and volatile headers, token fields,
    /// captured header prefixes) and whether its URLs need a host. ``WireProfile/generic`` by default; an adapter
    /// with protocol headers of its own, or one that opens hostless URLs, declares its own.
    var wireProfile: WireProfile { get }
}

extension BackendFactory {
    public var administrativeOptions: Set<String> { [] }
    public var wireProfile: WireProfile { .generic }

    /// Refuses a URL whose form this factory's ``wireProfile`` does not accept: without a host when
    /// ``WireProfile/requiresHost`` (``MBaaSError/Kind/invalidRequest`` naming the missing host).
    public func checkURLForm(_ url: BackendURL) throws(MBaaSError) {
        if wireProfile.requiresHost, url.host == nil {
            let scheme = schemes.first ?? url.scheme
            throw MBaaSError(.invalidRequest,
                             "backend URL '\(url)' has no host; \(adapterName) URLs name one (\(scheme)://[USER:SECRET@]HOST[:PORT])")
        }
    }
}

/// Maps URL schemes to adapter factories. A value, not a global: build one, register the adapters you link,
/// and pass it where it is needed. (The `mbaas` CLI registers every built-in adapter.)
public struct BackendRegistry: Sendable {
    private var factories: [String: any BackendFactory] = [:]

    public init(_ factories: [any BackendFactory] = []) {
        for f in factories { register(f) }
    }

    /// Registers a factory for each of its schemes, replacing any earlier one.
    public mutating func register(_ factory: any BackendFactory) {
        for scheme in factory.schemes { factories[scheme.lowercased()] = factory }
    }

    public var schemes: [String] { factories.keys.sorted() }
    public var adapterNames: [String] { Set(factories.values.map(\.adapterName)).sorted() }

    public func factory(forScheme scheme: String) -> (any BackendFactory)? { factories[scheme.lowercased()] }

    /// Opens a backend from its URL. An unknown scheme is ``MBaaSError/Kind/invalidRequest`` listing the known ones;
    /// so is a URL without a host for a factory whose ``BackendFactory/wireProfile`` requires one
    /// (``BackendFactory/checkURLForm(_:)``).
    public func open(_ url: BackendURL, context: BackendContext = BackendContext()) async throws -> any Backend {
        guard let factory = factories[url.scheme] else {
            throw MBaaSError(.invalidRequest, "unknown backend scheme '\(url.scheme)'; known: \(schemes.joined(separator: ", "))")
        }
        try factory.checkURLForm(url)
        return try await factory.open(url, context: context)
    }

    /// Parses and opens a URL string.
    public func open(_ string: String, context: BackendContext = BackendContext()) async throws -> any Backend {
        try await open(try BackendURL(parsing: string), context: context)
    }
}
