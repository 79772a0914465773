public import Logging
public import MBaaSCore

/// Starts an ``EmulatorDialect`` from the backend URL its clients open: the server side of a `BackendFactory`.
///
/// `mbaas serve ncmb+http://KEY:CLIENT@127.0.0.1:8080` reads the URL that `ncmb+http://…` clients open, and the
/// factory registered for `ncmb` builds the dialect that answers them. A new dialect is one factory registered in
/// a ``DialectRegistry`` (the `mbaas` CLI registers the built-in ones in `MBaaSBuiltins`); nothing in `mbaas serve`
/// changes.
///
/// # Contract
/// - ``schemes`` are the client adapter's schemes (without `+http`): the URL a dialect serves is the URL the
///   matching client opens, so ``EmulatorDialect/backendURL(host:port:)`` of the dialect made from a URL opens a
///   client that the dialect accepts.
/// - ``makeDialect(url:store:options:)`` reads from `url` the credentials, the path (a mount point, a context root)
///   and the options the dialect serves. Options only the client uses (a timeout, a batch size) are accepted and
///   ignored; an option neither side knows, or a missing credential, is ``MBaaSError/Kind/invalidRequest`` naming
///   the part. The host and port are the caller's to bind; the factory does not read them.
/// - It never opens a socket: the ``EmulatorServer`` serves the dialect it returns.
public protocol DialectFactory: Sendable {
    /// URL schemes this factory serves, without `+http` (the client adapter's schemes).
    var schemes: [String] { get }
    /// The dialect's name (`ncmb`), as `mbaas serve --dialect` takes it and ``EmulatorDialect/name`` reports it.
    var dialectName: String { get }
    /// Builds the dialect that answers the clients of `url`, on `store`.
    func makeDialect(url: BackendURL, store: any ServerStore, options: DialectOptions) async throws -> any EmulatorDialect
}

/// What `mbaas serve` passes to every dialect beside the URL.
public struct DialectOptions: Sendable {
    /// Where the dialect logs.
    public var logger: Logger
    /// The largest file upload in bytes (`--max-file-size`); the dialect's own default when `nil`.
    public var maxFileSize: Int?
    /// A JSON file of provisioned users (`--users`), for a vendor without sign-up. A dialect that takes none
    /// refuses it (``MBaaSError/Kind/invalidRequest``), so the file is never silently ignored.
    public var usersFile: String?

    public init(logger: Logger = Logger(label: "mbaas.emulator"), maxFileSize: Int? = nil, usersFile: String? = nil) {
        self.logger = logger
        self.maxFileSize = maxFileSize
        self.usersFile = usersFile
    }

    /// Refuses a users file, for dialects whose vendor has sign-up.
    func refuseUsersFile(dialect: String) throws(MBaaSError) {
        if usersFile != nil {
            throw MBaaSError(.invalidRequest, "the \(dialect) dialect takes no users file (its clients sign up); --users is for apppot")
        }
    }
}

/// Maps URL schemes to dialect factories, as `BackendRegistry` maps them to client factories. A value: build one
/// with the dialects you link and pass it where it is needed.
public struct DialectRegistry: Sendable {
    private var factories: [String: any DialectFactory] = [:]

    public init(_ factories: [any DialectFactory] = []) {
        for f in factories { register(f) }
    }

    /// Registers a factory for each of its schemes, replacing any earlier one.
    public mutating func register(_ factory: any DialectFactory) {
        for scheme in factory.schemes { factories[scheme.lowercased()] = factory }
    }

    /// The schemes served, sorted.
    public var schemes: [String] { factories.keys.sorted() }
    /// The dialects' names, sorted.
    public var dialectNames: [String] { Set(factories.values.map(\.dialectName)).sorted() }

    public func factory(forScheme scheme: String) -> (any DialectFactory)? { factories[scheme.lowercased()] }

    /// The dialect that serves `url`'s clients. An unknown scheme is ``MBaaSError/Kind/invalidRequest`` listing the
    /// served ones; so is an `https` URL (the emulator speaks plain HTTP: `scheme+http://…`).
    public func makeDialect(url: BackendURL, store: any ServerStore, options: DialectOptions) async throws -> any EmulatorDialect {
        guard let factory = factory(forScheme: url.scheme) else {
            throw MBaaSError(.invalidRequest, "no dialect serves '\(url.scheme)' URLs; served: \(schemes.map { "\($0)+http" }.joined(separator: ", "))")
        }
        guard !url.isSecure else {
            throw MBaaSError(.invalidRequest, "the emulator speaks plain HTTP: write the URL as \(url.scheme)+http://… (put TLS in front of it for HTTPS)")
        }
        return try await factory.makeDialect(url: url, store: store, options: options)
    }

    /// Refuses every option of `url` outside `served` and `clientOnly` (``MBaaSError/Kind/invalidRequest`` naming it).
    public static func requireKnownOptions(_ url: BackendURL, served: Set<String>, clientOnly: Set<String>, dialect: String) throws(MBaaSError) {
        let known = served.union(clientOnly)
        if let unknown = url.options.keys.sorted().first(where: { !known.contains($0) }) {
            throw MBaaSError(.invalidRequest,
                             "the \(dialect) dialect does not know the URL option '\(unknown)' (known: \(known.sorted().joined(separator: ", ")))")
        }
    }
}
