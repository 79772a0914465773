public import Foundation
public import MBaaSCore
@_exported import MBaaSParseWire

/// Where and how to reach a Parse Server application.
///
/// From a URL: `parse://APPLICATION_ID:REST_API_KEY@host/parse` (HTTPS), `parse+http://…@127.0.0.1:1337/parse` for
/// plain HTTP. The path is the mount point (`/parse` when the URL has none; `/1` for a server mounted there). The
/// REST key may be left out (`parse://APPLICATION_ID@host/parse`): parse-server checks client keys only when one
/// is configured. Options:
/// - `masterKey=KEY`: send `X-Parse-Master-Key` on calls made without a session (an administrative identity that
///   bypasses ACLs and class-level permissions; declared in ``ParseBackendFactory/administrativeOptions``, never
///   the default) and on file deletes, which need it;
/// - `batchSize` (1…50, default 20): requests per `/batch` call;
/// - `currentUserRoles=false` to skip the `_Role` query of ``ParseBackend/currentUser()``;
/// - `timeout` (seconds).
public struct ParseConfiguration: Sendable, Hashable {
    public var applicationId: String
    public var restAPIKey: String?
    public var masterKey: String?
    public var host: String
    public var port: Int?
    public var isSecure: Bool
    /// The mount point, normalized (`/parse`; the empty string for a server at the root).
    public var mount: String
    public var batchSize: Int = ParseWire.defaultBatchChunk
    public var currentUserRoles: Bool = true
    public var timeout: TimeInterval

    public init(applicationId: String, restAPIKey: String? = nil, masterKey: String? = nil, host: String,
                port: Int? = nil, isSecure: Bool = true, mount: String = ParseWire.defaultMount, timeout: TimeInterval = 30) {
        self.applicationId = applicationId
        self.restAPIKey = restAPIKey
        self.masterKey = masterKey
        self.host = host
        self.port = port
        self.isSecure = isSecure
        self.mount = ParseWire.normalizeMount(mount)
        self.timeout = timeout
    }

    public init(url: BackendURL) throws(MBaaSError) {
        guard let appId = url.user, !appId.isEmpty else {
            throw MBaaSError(.invalidRequest, "a Parse URL needs the application id: parse://APPLICATION_ID:REST_API_KEY@HOST/parse")
        }
        guard let host = url.host, !host.isEmpty else {
            throw MBaaSError(.invalidRequest, "a Parse URL needs a host: parse://APPLICATION_ID:REST_API_KEY@HOST/parse")
        }
        try url.requireKnownOptions(["masterKey", "batchSize", "currentUserRoles", "timeout"], adapter: "Parse")
        self.init(applicationId: appId, restAPIKey: url.secret.flatMap { $0.isEmpty ? nil : $0 }, host: host,
                  port: url.port, isSecure: url.isSecure, mount: url.path.isEmpty ? ParseWire.defaultMount : url.path)
        if let v = url.option("masterKey") {
            guard !v.isEmpty else { throw MBaaSError(.invalidRequest, "masterKey is empty") }
            masterKey = v
        }
        if let v = url.option("batchSize") {
            guard let n = Int(v), (1...ParseWire.maxBatchChunk).contains(n) else {
                throw MBaaSError(.invalidRequest, "batchSize must be 1 to \(ParseWire.maxBatchChunk), got '\(v)'")
            }
            batchSize = n
        }
        if let v = url.option("currentUserRoles") {
            switch v.lowercased() {
            case "", "1", "true", "yes", "on": currentUserRoles = true
            case "0", "false", "no", "off": currentUserRoles = false
            default: throw MBaaSError(.invalidRequest, "currentUserRoles must be true or false, got '\(v)'")
            }
        }
        if let t = try url.timeoutOption() { timeout = t }
    }

    /// `https://host[:port]`
    public var baseURL: String {
        (isSecure ? "https://" : "http://") + (host.contains(":") ? "[\(host)]" : host) + (port.map { ":\($0)" } ?? "")
    }
}

/// Opens ``ParseBackend``s from `parse://` URLs.
public struct ParseBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["parse"] }
    public var adapterName: String { "parse" }
    /// `masterKey`: the master key acts above every ACL, an identity no shipped app holds.
    public var administrativeOptions: Set<String> { ["masterKey"] }
    /// ``WireProfile/parse``: the `X-Parse-…` headers.
    public var wireProfile: WireProfile { .parse }
    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        ParseBackend(configuration: try ParseConfiguration(url: url), context: context)
    }
}

/// A client of one Parse Server application: objects on `/classes`, users, roles, sessions, files and batches.
///
/// Each instance holds its own session (`X-Parse-Session-Token`); a `209` answer to a request that carried it ends
/// the session. See ``ParseCodec`` for values, ``ParseQueryTranslator`` for queries and paging, and ``capabilities``
/// for what Parse cannot do.
public actor ParseBackend: Backend, ParseFamilyClient {
    public typealias Vendor = ParseWire

    public nonisolated let adapterName = "parse"
    public nonisolated let configuration: ParseConfiguration
    public nonisolated let context: BackendContext
    /// ``ParseWire/capabilities``, with ``MBaaSCore/Capabilities/Feature/fileDelete`` when the URL gives the master
    /// key (Parse Server deletes files for it only).
    public nonisolated let capabilities: Capabilities

    var currentSession: Session?

    /// The core's HTTP client for this application (made once: its base URL and error decoder do not change).
    nonisolated let http: HTTPAdapterClient

    public init(configuration: ParseConfiguration, context: BackendContext = BackendContext()) {
        self.configuration = configuration
        self.context = context
        self.http = Self.httpClient(configuration, context)
        var capabilities = ParseBackend.capabilities
        if configuration.masterKey != nil {
            // The master key deletes files and administers users, roles and classes (ParseBackend+Administration).
            // It bypasses ACLs and class-level permissions: reads see every record.
            capabilities.features.formUnion([.fileDelete, .listClasses, .listUsers, .importUsers, .userFields, .userEmail, .completeReads])
            for f in [Capabilities.Feature.listClasses, .listUsers, .importUsers, .completeReads] { capabilities.notes[f] = nil }
            capabilities.notes[.importUsers] = "users are created with a password nobody is told (or a temporary one); password hashes never move"
        }
        self.capabilities = capabilities
    }

    /// What Parse Server can do for a client without the master key (``ParseWire/capabilities``).
    public static let capabilities = ParseWire.capabilities

    public var session: Session? { currentSession }

    public func restore(_ session: Session?) { currentSession = session }

    /// A request body (the core's ``HTTPRequestBody``).
    typealias Body = HTTPRequestBody

    /// The core's HTTP client for this application: the mount point in the base URL and Parse's error decoder.
    static func httpClient(_ configuration: ParseConfiguration, _ context: BackendContext) -> HTTPAdapterClient {
        HTTPAdapterClient(name: "parse", displayName: "Parse", baseURL: configuration.baseURL + configuration.mount,
                          timeout: configuration.timeout, context: context) { response, now, what in
            ParseErrorBody.error(from: response, now: now, context: what)
        }
    }

    /// Who a request acts as.
    enum Identity {
        /// The session when there is one, else the master key when the URL gives one, else anonymous.
        case `default`
        /// Nobody (sign-up, log-in).
        case anonymous
        /// A given session token (log-out after the local session is gone).
        case token(String)
        /// The master key (file deletes); `unsupported` without one.
        case master
    }

    /// Sends a request to `{mount}{path}` and returns the 2xx response, or throws the mapped Parse error.
    ///
    /// Headers: `X-Parse-Application-Id`, `X-Parse-REST-API-Key` (when configured), the session or master key,
    /// `Content-Type` with a body, `X-Parse-Revocable-Session: 1` when `revocable`, and on POST and PUT an
    /// `X-Parse-Request-Id` (a lowercased UUID, also the request's ``TransportRequest/idempotencyKey`` so that a retry
    /// repeats it, as parse-server's idempotency option expects).
    func send(
        _ method: TransportRequest.Method, _ path: String, query: [(String, String)] = [], body: Body = .none,
        as identity: Identity = .default, revocable: Bool = false, onLogin: Bool = false,
        timeout: TimeInterval? = nil, context what: String? = nil
    ) async throws(MBaaSError) -> TransportResponse {
        let http = self.http
        var request = try http.request(method, path, query: query, body: body, timeout: timeout)
        request.headers[ParseHeader.applicationId] = configuration.applicationId
        if let key = configuration.restAPIKey { request.headers[ParseHeader.restAPIKey] = key }
        var sentToken: String?
        switch identity {
        case .default:
            if let token = currentSession?.token {
                request.headers[ParseHeader.sessionToken] = token
                sentToken = token
            } else if let master = configuration.masterKey {
                request.headers[ParseHeader.masterKey] = master
            }
        case .anonymous: break
        case .token(let token):
            request.headers[ParseHeader.sessionToken] = token
            sentToken = token
        case .master:
            guard let master = configuration.masterKey else {
                throw MBaaSError.unsupported("\(what ?? method.rawValue) without the master key", by: "parse",
                                             reason: "Parse Server requires X-Parse-Master-Key here; open the backend with the masterKey= URL option")
            }
            request.headers[ParseHeader.masterKey] = master
        }
        if revocable { request.headers[ParseHeader.revocableSession] = "1" }
        if method == .post || method == .put {
            let id = UUID().uuidString.lowercased()
            request.headers[ParseHeader.requestId] = id
            request.idempotencyKey = id
        }
        do {
            return try await http.send(request, path: path, context: what) { response, now, what in
                ParseErrorBody.error(from: response, now: now, onLogin: onLogin, context: what)
            }
        } catch {
            if error.vendorCode == "209", let sentToken, currentSession?.token == sentToken {
                currentSession = nil
                context.logger.info("parse session ended by the server (209)")
            }
            throw error
        }
    }

    /// The response body as JSON, or a decoding error.
    func json(_ response: TransportResponse) throws(MBaaSError) -> JSON { try http.json(response) }

    static func checkClassName(_ name: String) throws(MBaaSError) -> String {
        guard !name.isEmpty else { throw MBaaSError(.invalidRequest, "empty class name") }
        return name
    }
}

/// `Task.checkCancellation()` throwing an ``MBaaSError`` of kind `transport`.
func checkCancelled() throws(MBaaSError) {
    if Task.isCancelled { throw MBaaSError(.transport, "cancelled", underlying: CancellationError()) }
}
